import assert from 'node:assert/strict';
import { test } from 'node:test';

import { parseOptions } from '../src/options.js';
import { mayTrack } from '../src/privacy.js';

const options = (data = {}) => parseOptions(data, 'https://ingest.example/tracker.js');

test('an ordinary visit is tracked', () => {
  assert.equal(mayTrack(options(), {}, 'site.example', false), true);
});

test('Do Not Track and Global Privacy Control stop tracking, unless data-respect-dnt="false"', () => {
  for (const navigator of [{ doNotTrack: '1' }, { globalPrivacyControl: true }]) {
    assert.equal(mayTrack(options(), navigator, 'site.example', false), false);
    assert.equal(mayTrack(options({ respectDnt: 'false' }), navigator, 'site.example', false), true);
  }
  assert.equal(mayTrack(options(), { doNotTrack: '0', globalPrivacyControl: false }, 'site.example', false), true);
});

test('localStorage.egis_ignore stops tracking whatever the other settings', () => {
  assert.equal(mayTrack(options({ respectDnt: 'false' }), {}, 'site.example', true), false);
});

test('data-domains: exact hostnames only, case-insensitive', () => {
  const limited = options({ domains: 'shop.example,www.shop.example' });
  assert.equal(mayTrack(limited, {}, 'shop.example', false), true);
  assert.equal(mayTrack(limited, {}, 'WWW.Shop.example', false), true);
  assert.equal(mayTrack(limited, {}, 'staging.shop.example', false), false);
  assert.equal(mayTrack(limited, {}, 'localhost', false), false);
});
