import assert from 'node:assert/strict';
import { test } from 'node:test';

import { createQueue, MAX_BATCH_EVENTS } from '../src/queue.js';
import { event } from './helpers.mjs';

test('a batch is at most 50 events, and the 50th event asks for a flush', () => {
  assert.equal(MAX_BATCH_EVENTS, 50);
  let full = 0;
  const queue = createQueue(() => {
    full += 1;
    assert.equal(queue.take().length, 50);
  });
  for (let n = 1; n < 50; n++) queue.push(event(n));
  assert.equal(full, 0);
  queue.push(event(50));
  assert.equal(full, 1);
  queue.push(event(51));
  assert.deepEqual(queue.take().map((e) => e.name), ['e51']);
});

test('take() empties the queue and keeps the order', () => {
  const queue = createQueue(() => {});
  queue.push(event(1));
  queue.push(event(2));
  assert.deepEqual(queue.take().map((e) => e.name), ['e1', 'e2']);
  assert.deepEqual(queue.take(), []);
});
