import assert from 'node:assert/strict';
import { test } from 'node:test';

import { createBatchStore, MAX_STORED_BATCHES, MAX_STORED_CHARS } from '../src/batch-store.js';
import { event, memoryStorage } from './helpers.mjs';

const batch = (id, events = [event(1)]) => ({ id, sessionId: 's', anonymousId: 'a', events });

test('put, all and remove; a put again moves the batch to the newest place', () => {
  const store = createBatchStore(memoryStorage(), 'egis_k');
  store.put(batch('b1'));
  store.put(batch('b2'));
  store.put(batch('b1'));
  assert.deepEqual(store.all().map((b) => b.id), ['b2', 'b1']);
  store.remove('b2');
  assert.deepEqual(store.all().map((b) => b.id), ['b1']);
});

test('what one page stores, the next page with the same key finds; another key does not', () => {
  const storage = memoryStorage();
  createBatchStore(storage, 'egis_k').put(batch('b1'));
  assert.deepEqual(createBatchStore(storage, 'egis_k').all().map((b) => b.id), ['b1']);
  assert.deepEqual(createBatchStore(storage, 'egis_other').all(), []);
});

test('bounded: beyond 20 batches the oldest go', () => {
  const store = createBatchStore(memoryStorage(), 'egis_k');
  for (let n = 1; n <= MAX_STORED_BATCHES + 5; n++) store.put(batch(`b${n}`));
  const ids = store.all().map((b) => b.id);
  assert.equal(ids.length, MAX_STORED_BATCHES);
  assert.equal(ids[0], 'b6');
});

test('bounded: beyond 200,000 characters the oldest go; a batch alone over it is not kept', () => {
  const storage = memoryStorage();
  const store = createBatchStore(storage, 'egis_k');
  const big = (id) => batch(id, [{ ...event(1), properties: { text: 'x'.repeat(60000) } }]);
  for (const id of ['b1', 'b2', 'b3', 'b4']) store.put(big(id));
  assert.deepEqual(store.all().map((b) => b.id), ['b2', 'b3', 'b4']);
  assert.ok(storage.items.get('egis_batches_egis_k').length <= MAX_STORED_CHARS);
  store.put(batch('huge', [{ ...event(1), properties: { text: 'x'.repeat(MAX_STORED_CHARS) } }]));
  assert.deepEqual(store.all(), []);
});

test('unreadable or blocked storage reads as empty', () => {
  assert.deepEqual(createBatchStore(memoryStorage({ egis_batches_egis_k: '{oops' }), 'egis_k').all(), []);
  const blocked = { get: () => undefined, set: () => {} };
  const store = createBatchStore(blocked, 'egis_k');
  store.put(batch('b1'));
  assert.deepEqual(store.all(), []);
});
