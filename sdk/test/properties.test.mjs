import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';

import { checkedProperties, errorProperties, utmProperties } from '../src/properties.js';

let warnings;
beforeEach((t) => {
  warnings = [];
  t.mock.method(console, 'warn', (...args) => warnings.push(args.join(' ')));
});

test('checkedProperties: a copy of a JSON object', () => {
  const given = { plan: 'pro', seats: 3, nested: { a: [1, 2] } };
  const checked = checkedProperties(given);
  assert.deepEqual(checked, given);
  given.plan = 'changed later';
  assert.equal(checked.plan, 'pro');
  assert.deepEqual(checkedProperties(undefined), {});
  assert.deepEqual(warnings, []);
});

test('checkedProperties: not an object, circular, or over 16 KiB gives {} and a warning', () => {
  const circular = {};
  circular.self = circular;
  for (const bad of ['text', [1, 2], 42, circular, { text: 'é'.repeat(8200) }]) {
    assert.deepEqual(checkedProperties(bad), {});
  }
  assert.equal(warnings.length, 5);
  assert.deepEqual(checkedProperties({ text: 'x'.repeat(16000) }).text.length, 16000);
});

test('errorProperties: message, stack and context, cut to 1000 and 4000 characters', () => {
  const error = new Error('x'.repeat(2000));
  const props = errorProperties(error, { route: '/cart' });
  assert.equal(props.message.length, 1000);
  assert.ok(props.stack.length <= 4000 && props.stack.startsWith('Error: x'));
  assert.deepEqual(props.context, { route: '/cart' });
  assert.deepEqual(errorProperties('plain text'), { message: 'plain text', stack: '', context: undefined });
  assert.equal(errorProperties(undefined).message, 'Error');
});

test('utmProperties: the three UTM parameters that are present', () => {
  assert.deepEqual(utmProperties('https://site.example/?utm_source=news&utm_campaign=spring&utm_term=x&ref=1'), {
    utm_source: 'news',
    utm_campaign: 'spring',
  });
  assert.deepEqual(utmProperties('https://site.example/'), {});
});
