import assert from 'node:assert/strict';
import { test } from 'node:test';

import { byteLength, cut } from '../src/text.js';

test('cut: at most max characters, "" for nothing', () => {
  assert.equal(cut('abcdef', 3), 'abc');
  assert.equal(cut(undefined, 3), '');
  assert.equal(cut(null, 3), '');
  assert.equal(cut(12345, 3), '123');
});

test('cut never leaves half of a surrogate pair (the service refuses lone surrogates)', () => {
  const cutText = cut('ab😀', 3);
  assert.equal(cutText, 'ab');
  assert.ok(cutText.isWellFormed());
  assert.equal(cut('ab😀', 4), 'ab😀');
});

test('byteLength counts UTF-8 bytes', () => {
  assert.equal(byteLength('abc'), 3);
  assert.equal(byteLength('é😀'), 6);
});
