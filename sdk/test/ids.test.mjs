import assert from 'node:assert/strict';
import { webcrypto } from 'node:crypto';
import { test } from 'node:test';

import { randomId } from '../src/ids.js';

test('randomUUID where it exists', () => {
  assert.match(randomId(webcrypto), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});

test('getRandomValues otherwise (no secure context): 128 random bits, distinct', () => {
  const insecure = { getRandomValues: (array) => webcrypto.getRandomValues(array) };
  const ids = new Set(Array.from({ length: 1000 }, () => randomId(insecure)));
  assert.equal(ids.size, 1000);
  for (const id of ids) assert.match(id, /^\d+-\d+-\d+-\d+$/);
});
