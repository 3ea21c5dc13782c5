import assert from 'node:assert/strict';
import { test } from 'node:test';

import { depthsReached } from '../src/scroll-depth.js';

test('the depths the bottom of the viewport has reached', () => {
  assert.deepEqual(depthsReached(800, 4000), []);
  assert.deepEqual(depthsReached(1000, 4000), [25]);
  assert.deepEqual(depthsReached(3999.5, 4000), [25, 50, 75, 100]);
});

test('a page that fits the viewport is read to 100 at once', () => {
  assert.deepEqual(depthsReached(900, 700), [25, 50, 75, 100]);
  assert.deepEqual(depthsReached(900, 0), [25, 50, 75, 100]);
});
