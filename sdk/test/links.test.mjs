import assert from 'node:assert/strict';
import { test } from 'node:test';

import { linkProperties } from '../src/links.js';

const props = (href, download = false) => JSON.parse(JSON.stringify(linkProperties(href, download, 'site.example')));

test('a link on the same host: just its href, query string kept', () => {
  assert.deepEqual(props('https://site.example/pricing?plan=pro'), { href: 'https://site.example/pricing?plan=pro' });
});

test('outbound: another host (a subdomain is another host too)', () => {
  assert.deepEqual(props('https://other.example/'), { href: 'https://other.example/', outbound: true });
  assert.equal(props('https://blog.site.example/').outbound, true);
});

test('download: the download attribute or a file extension', () => {
  assert.equal(props('https://site.example/report.PDF').download, true);
  assert.equal(props('https://cdn.example/app.dmg?sig=1').download, true);
  assert.equal(props('https://site.example/export', true).download, true);
  assert.equal(props('https://site.example/docs/').download, undefined);
});

test('mailto:, tel: and other schemes: the scheme only, never the address', () => {
  assert.deepEqual(props('mailto:jane@example.com'), { href: 'mailto:' });
  assert.deepEqual(props('tel:+15551234567'), { href: 'tel:' });
});

test('href cut to 2048 characters; an unparsable href gives nothing', () => {
  assert.equal(props(`https://site.example/?q=${'a'.repeat(5000)}`).href.length, 2048);
  assert.deepEqual(props('http://[broken'), {});
});
