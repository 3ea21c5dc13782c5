import assert from 'node:assert/strict';
import { afterEach, beforeEach, mock, test } from 'node:test';

import { createBatchStore } from '../src/batch-store.js';
import { createDelivery, KEEPALIVE_BUDGET } from '../src/delivery.js';
import { safeStorage } from '../src/storage.js';
import { event, memoryStorage } from './helpers.mjs';

const tick = () => new Promise((resolve) => setImmediate(resolve));

/**
 * A delivery with a scripted service: `answers` are taken in order (default 200), every request
 * is recorded with its parsed body.
 */
function setup({ answers = [], gzip = false, storage = memoryStorage(), post } = {}) {
  const requests = [];
  let ids = 0;
  const store = createBatchStore(storage, 'egis_k');
  const delivery = createDelivery(
    post ??
      (async (text, keepalive, gzipped) => {
        requests.push({ batch: JSON.parse(text), keepalive, gzipped, bytes: Buffer.byteLength(text) });
        return answers.shift() ?? { status: 200, body: { success: true, count: 1 } };
      }),
    store,
    () => ({ sessionId: 'sess', anonymousId: 'anon', userId: 'user_1' }),
    () => `batch${++ids}`,
    gzip,
  );
  return { delivery, requests, store, storage };
}

/**
 * A delivery (gzip on) whose requests wait until the test answers them: `pending` holds their
 * resolvers, in the order the requests were made.
 */
function setupAnsweredByTest() {
  const pending = [];
  const requests = [];
  const made = setup({
    gzip: true,
    post: (text, keepalive, gzipped) => {
      requests.push({ batch: JSON.parse(text), keepalive, gzipped });
      return new Promise((resolve) => pending.push(resolve));
    },
  });
  return { ...made, requests, pending };
}

let warnings;
beforeEach((t) => {
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_700_000_000_000 });
  warnings = [];
  t.mock.method(console, 'warn', (...args) => warnings.push(args.join(' ')));
});
afterEach(() => mock.timers.reset());

test('flush sends the queued events as one batch with the batch fields', async () => {
  const { delivery, requests, store } = setup({ gzip: true });
  delivery.add(event(1));
  delivery.add(event(2));
  await delivery.flush();
  assert.equal(requests.length, 1);
  const { batch, keepalive, gzipped } = requests[0];
  assert.deepEqual(batch, {
    id: 'batch1',
    sessionId: 'sess',
    anonymousId: 'anon',
    userId: 'user_1',
    events: [event(1), event(2)],
    timestamp: 1_700_000_000_000,
    compressed: true,
  });
  assert.equal(keepalive, false);
  assert.equal(gzipped, true);
  assert.deepEqual(store.all(), [], 'an acknowledged batch leaves the store');
  await delivery.flush();
  assert.equal(requests.length, 1, 'nothing queued, nothing sent');
});

test('the 50th event sends a batch of 50 at once; the next ones wait', async () => {
  const { delivery, requests } = setup();
  for (let n = 1; n <= 51; n++) delivery.add(event(n));
  await tick();
  assert.equal(requests.length, 1);
  assert.equal(requests[0].batch.events.length, 50);
  await delivery.flush();
  assert.deepEqual(requests[1].batch.events, [event(51)]);
});

test('events over 64 KiB in all are split into batches that each fit the keepalive budget', async () => {
  const { delivery, requests } = setup();
  for (let n = 1; n <= 40; n++) delivery.add({ ...event(n), properties: { blob: 'x'.repeat(3000) } });
  await delivery.flush();
  assert.equal(requests.length, 2);
  assert.deepEqual(requests.flatMap((r) => r.batch.events.map((e) => e.name)), Array.from({ length: 40 }, (_, n) => `e${n + 1}`));
  for (const { bytes } of requests) assert.ok(bytes <= KEEPALIVE_BUDGET, String(bytes));
  assert.notEqual(requests[0].batch.id, requests[1].batch.id);
});

test('network errors, 429 and 5xx: retried later with the same id and events, Retry-After honoured', async (t) => {
  t.mock.method(Math, 'random', () => 0.5);
  const { delivery, requests, store } = setup({
    answers: [{ status: 0 }, { status: 503, retryAfter: '5' }, { status: 429, retryAfter: '30' }],
  });
  delivery.add(event(1));
  await delivery.flush();
  assert.deepEqual(store.all().map((b) => b.id), ['batch1'], 'kept in the store while unacknowledged');

  mock.timers.tick(499);
  await delivery.flush();
  assert.equal(requests.length, 1, 'first retry after 0.5 x 1 s, not before (flush waits too)');
  mock.timers.tick(1);
  await tick();
  assert.equal(requests.length, 2);

  mock.timers.tick(4999);
  await tick();
  assert.equal(requests.length, 2, 'Retry-After: 5 is the minimum');
  mock.timers.tick(1);
  await tick();
  assert.equal(requests.length, 3);

  mock.timers.tick(30000);
  await tick();
  assert.equal(requests.length, 4);
  assert.deepEqual(new Set(requests.map((r) => r.batch.id)), new Set(['batch1']));
  assert.deepEqual(requests[3].batch.events, [event(1)]);
  assert.deepEqual(store.all(), []);
});

test('403 with restrictedTypes: those types are dropped, the rest resent under a new id', async () => {
  const { delivery, requests } = setup({
    answers: [{ status: 403, body: { error: 'plan', restrictedTypes: ['performance', 'error'] } }],
  });
  delivery.add(event(1, 'pageview'));
  delivery.add(event(2, 'performance'));
  delivery.add(event(3, 'error'));
  delivery.add(event(4, 'click'));
  await delivery.flush();
  await tick();
  assert.equal(requests.length, 2);
  assert.equal(requests[1].batch.id, 'batch2');
  assert.deepEqual(requests[1].batch.events.map((e) => e.type), ['pageview', 'click']);

  delivery.add(event(5, 'performance'));
  delivery.add(event(6, 'custom'));
  await delivery.flush();
  assert.deepEqual(requests[2].batch.events.map((e) => e.type), ['custom'], 'later events of those types are dropped');
});

test('400: dropped with a warning, never retried', async () => {
  const { delivery, requests, store } = setup({ answers: [{ status: 400, body: { error: 'events[0].type: bad' } }] });
  delivery.add(event(1));
  await delivery.flush();
  mock.timers.tick(120000);
  delivery.add(event(2));
  await delivery.flush();
  assert.deepEqual(requests.map((r) => r.batch.id), ['batch1', 'batch2']);
  assert.match(warnings[0], /400 events\[0\]\.type: bad/);
  assert.deepEqual(store.all(), []);
});

test('401: dropped with a warning, and nothing more is sent from this page', async () => {
  const { delivery, requests } = setup({ answers: [{ status: 401, body: { error: 'Unknown key.' } }] });
  delivery.add(event(1));
  await delivery.flush();
  delivery.add(event(2));
  await delivery.flush();
  delivery.hide();
  assert.equal(requests.length, 1);
  assert.match(warnings[0], /401 Unknown key\..*stopped/);
});

test('batches an earlier page left in the store are sent by the next page', async () => {
  const storage = memoryStorage();
  const first = setup({ storage, post: () => new Promise(() => {}) });
  first.delivery.add(event(1));
  first.delivery.flush();
  const next = setup({ storage });
  await next.delivery.flush();
  assert.equal(next.requests.length, 1);
  assert.equal(next.requests[0].batch.id, 'batch1');
  assert.deepEqual(next.store.all(), []);
});

test('page hide: batches go with keepalive, uncompressed, those in ordinary requests too (and stay stored until answered)', async () => {
  const { delivery, store, requests, pending } = setupAnsweredByTest();
  for (let n = 1; n <= 100; n++) delivery.add(event(n));
  assert.equal(requests.length, 2, 'two full batches went out as normal requests');
  delivery.add(event(101));
  delivery.hide();
  // A leaving page cancels ordinary requests: the batches in flight go again, with keepalive.
  assert.deepEqual(requests.slice(2).map((r) => [r.batch.id, r.keepalive, r.gzipped, r.batch.compressed]),
    [['batch1', true, false, false], ['batch2', true, false, false], ['batch3', true, false, false]]);
  assert.equal(requests[4].batch.events.length, 1);
  // The browser delivers keepalive requests after the page is gone: the idle batch leaves the
  // store; those that were in flight stay until an answer settles them.
  assert.deepEqual(store.all().map((b) => b.id), ['batch1', 'batch2']);
  delivery.hide();
  assert.equal(requests.length, 5, 'a batch already going with keepalive is not sent again');

  for (const resolve of pending.splice(0, 2)) resolve({ status: 0 });
  await tick();
  assert.deepEqual(store.all().map((b) => b.id), ['batch1', 'batch2'], 'a cancelled ordinary request does not count: its keepalive copy decides');
  pending.shift()({ status: 503 });
  pending.shift()({ status: 200, body: { success: true, count: 50 } });
  await tick();
  assert.deepEqual(store.all().map((b) => b.id), ['batch1'], 'stored: batch1 to retry; batch2 answered');
});

test('page hide during a backoff: the batches waiting to retry go with keepalive, under their id, and stay stored until answered', async (t) => {
  t.mock.method(Math, 'random', () => 1);
  const { delivery, store, requests, pending } = setupAnsweredByTest();
  delivery.add(event(1));
  const flushed = delivery.flush();
  pending.shift()({ status: 503, retryAfter: '30' });
  await flushed;
  delivery.add(event(2));
  await delivery.flush();
  assert.equal(requests.length, 1, 'waiting 30 s to retry: the new batch waits too');
  assert.deepEqual(store.all().map((b) => b.id), ['batch1', 'batch2']);

  mock.timers.tick(10000);
  delivery.hide();
  assert.deepEqual(requests.slice(1).map((r) => [r.batch.id, r.keepalive, r.gzipped, r.batch.compressed]),
    [['batch1', true, false, false], ['batch2', true, false, false]], 'both get their last chance, uncompressed');
  assert.deepEqual(requests[1].batch.events, [event(1)]);
  assert.deepEqual(store.all().map((b) => b.id), ['batch1'], 'the one waiting to retry stays stored; the one never tried leaves');
  delivery.hide();
  assert.equal(requests.length, 3, 'a batch already going with keepalive is not sent again');

  pending.shift()({ status: 200, body: { success: true, count: 1 } });
  pending.shift()({ status: 200, body: { success: true, count: 1 } });
  await tick();
  assert.deepEqual(store.all(), [], 'answered: settled, and no longer stored');
  mock.timers.tick(20000);
  await tick();
  assert.equal(requests.length, 3, 'the retry finds nothing left to send');
});

test('page hide during a backoff: a keepalive copy answered with a retry waits for the next retry', async (t) => {
  t.mock.method(Math, 'random', () => 1);
  const { delivery, requests, store } = setup({ answers: [{ status: 503, retryAfter: '30' }, { status: 503 }] });
  delivery.add(event(1));
  await delivery.flush();
  delivery.hide();
  await tick();
  assert.deepEqual(requests.map((r) => [r.batch.id, r.keepalive]), [['batch1', false], ['batch1', true]]);
  assert.deepEqual(store.all().map((b) => b.id), ['batch1']);
  mock.timers.tick(1999);
  await tick();
  assert.equal(requests.length, 2, 'the second failure: up to 2 s, from its answer');
  mock.timers.tick(1);
  await tick();
  assert.deepEqual(requests.map((r) => r.keepalive), [false, true, false]);
  assert.deepEqual(store.all(), []);
});

test('a page left during a backoff: the next page sends the batch again under the same id when no answer came', async () => {
  const storage = memoryStorage();
  const sent = [];
  const answers = [{ status: 503, retryAfter: '30' }];
  // The keepalive copy's answer reaches no code: the page is gone.
  const leaving = setup({ storage, post: async (text, keepalive) => sent.push([JSON.parse(text).id, keepalive]) && (answers.shift() ?? new Promise(() => {})) });
  leaving.delivery.add(event(1));
  await leaving.delivery.flush();
  leaving.delivery.hide();
  assert.deepEqual(sent, [['batch1', false], ['batch1', true]]);
  const next = setup({ storage });
  await next.delivery.flush();
  assert.deepEqual(next.requests.map((r) => r.batch.id), ['batch1'], 'sent twice under one id: the service stores it once');
  assert.deepEqual(next.store.all(), []);
});

test('a batch in flight when the page leaves is sent again by the next page if its keepalive copy fails', async () => {
  const storage = memoryStorage();
  const sent = [];
  // Never answered in this page: it leaves while they are in flight, and the keepalive copy's
  // answer (a 503, say) reaches no code.
  const leaving = setup({ storage, post: (text, keepalive) => sent.push(keepalive) && new Promise(() => {}) });
  leaving.delivery.add(event(1));
  leaving.delivery.flush();
  leaving.delivery.hide();
  assert.deepEqual(sent, [false, true]);
  const next = setup({ storage });
  await next.delivery.flush();
  assert.deepEqual(next.requests.map((r) => r.batch.id), ['batch1']);
  assert.deepEqual(next.store.all(), []);
});

test('page hide splits the idle batches under the budget; what does not fit stays stored', async () => {
  const requests = [];
  const storage = memoryStorage();
  const batches = Array.from({ length: 6 }, (_, n) => ({
    id: `old${n}`,
    sessionId: 's',
    anonymousId: 'a',
    events: [{ ...event(n), properties: { text: 'x'.repeat(20000) } }],
  }));
  createBatchStore(storage, 'egis_k').put(batches[0]);
  for (const batch of batches.slice(1)) createBatchStore(storage, 'egis_k').put(batch);
  const { delivery, store } = setup({
    storage,
    post: (text, keepalive) => {
      requests.push({ keepalive, bytes: Buffer.byteLength(text), id: JSON.parse(text).id });
      return new Promise(() => {});
    },
  });
  delivery.hide();
  assert.equal(requests.length, 3, 'three batches of about 20 KB fit in 64 KiB');
  assert.ok(requests.every((r) => r.keepalive));
  assert.ok(requests.reduce((sum, r) => sum + r.bytes, 0) <= KEEPALIVE_BUDGET);
  assert.deepEqual(store.all().map((b) => b.id), ['old3', 'old4', 'old5']);
  delivery.hide();
  assert.equal(requests.length, 3, 'the budget is still taken by the requests in flight');
});

test('page hide with more queued than the budget: a part goes now, the rest waits in the store', () => {
  const requests = [];
  const { delivery, store } = setup({
    post: (text, keepalive) => {
      requests.push({ keepalive, bytes: Buffer.byteLength(text), batch: JSON.parse(text) });
      return new Promise(() => {});
    },
  });
  for (let n = 1; n <= 40; n++) delivery.add({ ...event(n), properties: { blob: 'x'.repeat(3000) } });
  delivery.hide();
  assert.equal(requests.length, 1);
  assert.ok(requests[0].keepalive && requests[0].bytes <= KEEPALIVE_BUDGET);
  const sent = requests[0].batch.events.length;
  const [waiting] = store.all();
  assert.ok(sent > 0 && sent < 40);
  assert.equal(sent + waiting.events.length, 40);
  assert.notEqual(waiting.id, requests[0].batch.id);
});

test('a keepalive batch answered with a retry comes back to the store', async () => {
  const { delivery, store } = setup({ answers: [{ status: 503 }] });
  delivery.add(event(1));
  delivery.hide();
  assert.deepEqual(store.all(), []);
  await tick();
  assert.deepEqual(store.all().map((b) => b.id), ['batch1']);
});

test('storage-free (a storage that holds nothing): batches wait in memory, are retried from there, and get their keepalive chance', async (t) => {
  t.mock.method(Math, 'random', () => 1);
  const { delivery, requests } = setup({ storage: safeStorage(() => false), answers: [{ status: 503 }] });
  delivery.add(event(1));
  await delivery.flush();
  mock.timers.tick(1000);
  await tick();
  assert.deepEqual(requests.map((r) => [r.batch.id, r.keepalive]), [['batch1', false], ['batch1', false]]);
  delivery.add(event(2));
  delivery.hide();
  assert.deepEqual(requests.slice(2).map((r) => [r.batch.id, r.keepalive, r.batch.events]), [['batch2', true, [event(2)]]]);
});
