import assert from 'node:assert/strict';
import { test } from 'node:test';

import { parseOptions } from '../src/options.js';

const SRC = 'https://ingest.example:8443/tracker.js?v=3';

test('defaults: every switch on, API from the script origin, 5 s flush, no domain limit', () => {
  const options = parseOptions({ key: 'egis_abc' }, SRC);
  assert.equal(options.key, 'egis_abc');
  assert.equal(options.api, 'https://ingest.example:8443');
  assert.equal(options.flushInterval, 5000);
  assert.deepEqual(options.domains, []);
  for (const name of ['pageviews', 'clicks', 'scroll', 'forms', 'vitals', 'errors', 'heartbeat', 'respectDnt', 'storage']) {
    assert.equal(options.on(name), true, name);
  }
});

test('a switch is off only with the exact value "false"', () => {
  const options = parseOptions({ clicks: 'false', scroll: 'no', forms: '', respectDnt: 'false', storage: 'false' }, SRC);
  assert.equal(options.on('clicks'), false);
  assert.equal(options.on('storage'), false);
  assert.equal(options.on('respectDnt'), false);
  assert.equal(options.on('scroll'), true);
  assert.equal(options.on('forms'), true);
});

test('data-api wins over the script origin, without trailing slashes', () => {
  assert.equal(parseOptions({ api: 'https://collect.example/egis/' }, SRC).api, 'https://collect.example/egis');
  assert.equal(parseOptions({}, undefined).api, '');
});

test('data-domains: a trimmed, lower-cased list', () => {
  assert.deepEqual(parseOptions({ domains: ' A.example, b.example ,,' }, SRC).domains, ['a.example', 'b.example']);
});

test('data-flush-interval: a positive number of ms, else the default', () => {
  assert.equal(parseOptions({ flushInterval: '200' }, SRC).flushInterval, 200);
  for (const bad of ['0', '-5', 'soon']) assert.equal(parseOptions({ flushInterval: bad }, SRC).flushInterval, 5000);
});
