import assert from 'node:assert/strict';
import { test } from 'node:test';

import { backoffDelay } from '../src/backoff.js';
import { retryAfterMs } from '../src/retry-policy.js';

test('the ceiling doubles from 1 s and stops at 60 s', () => {
  const ceiling = (attempt) => backoffDelay(attempt, 0, () => 1);
  assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 8].map(ceiling), [1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000]);
  assert.equal(ceiling(50), 60000);
});

test('full jitter: anywhere from 0 to the ceiling', () => {
  assert.equal(backoffDelay(3, 0, () => 0), 0);
  assert.equal(backoffDelay(3, 0, () => 0.25), 1000);
  for (let i = 0; i < 1000; i++) {
    const delay = backoffDelay(4);
    assert.ok(delay >= 0 && delay < 8000, String(delay));
  }
});

test('Retry-After is the minimum delay', () => {
  assert.equal(backoffDelay(1, 30000, () => 0.5), 30000);
  assert.equal(backoffDelay(7, 5000, () => 0.5), 30000);
  assert.equal(retryAfterMs('30'), 30000);
  assert.equal(retryAfterMs('0'), 0);
  assert.equal(retryAfterMs(null), 0);
  assert.equal(retryAfterMs('Wed, 21 Oct 2015 07:28:00 GMT'), 0);
});
