import assert from 'node:assert/strict';
import { test } from 'node:test';

import { chunkBySize, pickWithinBudget } from '../src/split.js';

const size = (item) => item.size;

test('picks in order while the budget lasts, and skips what does not fit', () => {
  const items = [{ size: 30 }, { size: 50 }, { size: 20 }, { size: 10 }];
  assert.deepEqual(pickWithinBudget(items, 60, size), [items[0], items[2], items[3]]);
});

test('an item larger than the whole budget is never picked (it waits for a normal send)', () => {
  assert.deepEqual(pickWithinBudget([{ size: 65537 }], 65536, size), []);
  assert.deepEqual(pickWithinBudget([{ size: 65536 }], 65536, size), [{ size: 65536 }]);
  assert.deepEqual(pickWithinBudget([{ size: 1 }], 0, size), []);
});

test('never over the budget, whatever the sizes', () => {
  let seed = 42;
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  for (let round = 0; round < 500; round++) {
    const items = Array.from({ length: Math.floor(random() * 30) }, () => ({ size: Math.floor(random() * 40000) }));
    const budget = Math.floor(random() * 70000);
    const picked = pickWithinBudget(items, budget, size);
    assert.ok(picked.reduce((sum, item) => sum + item.size, 0) <= budget);
    // Greedy: every item left out would have overflowed the budget at its turn.
    let used = 0;
    for (const item of items) {
      if (picked.includes(item)) used += item.size;
      else assert.ok(used + item.size > budget);
    }
  }
});

test('chunkBySize: consecutive chunks within the size, order kept', () => {
  const items = [40, 30, 20, 50, 10].map((size, n) => ({ size, n }));
  assert.deepEqual(
    chunkBySize(items, 60, size).map((chunk) => chunk.map((item) => item.n)),
    [[0], [1, 2], [3, 4]],
  );
  assert.deepEqual(chunkBySize([], 60, size), []);
});

test('chunkBySize: an item over the size gets a chunk of its own', () => {
  const items = [10, 100, 10].map((size, n) => ({ size, n }));
  assert.deepEqual(
    chunkBySize(items, 60, size).map((chunk) => chunk.map((item) => item.n)),
    [[0], [1], [2]],
  );
});
