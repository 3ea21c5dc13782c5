import assert from 'node:assert/strict';
import { afterEach, beforeEach, mock, test } from 'node:test';

import { createIdentity, SESSION_TIMEOUT } from '../src/identity.js';
import { memoryStorage } from './helpers.mjs';

let counter;
const newId = () => `id${++counter}`;
beforeEach(() => {
  counter = 0;
  mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
});
afterEach(() => mock.timers.reset());

test('the session lasts while active and renews after 30 idle minutes', () => {
  const identity = createIdentity(memoryStorage(), memoryStorage(), newId);
  identity.touch();
  const first = identity.sessionId();
  mock.timers.tick(SESSION_TIMEOUT);
  identity.touch();
  assert.equal(identity.sessionId(), first, 'exactly 30 minutes idle: same session');
  mock.timers.tick(SESSION_TIMEOUT + 1);
  identity.touch();
  assert.notEqual(identity.sessionId(), first);
});

test('a reload (same sessionStorage) keeps the session; a new tab starts one; the anonymous id stays', () => {
  const local = memoryStorage();
  const tab = memoryStorage();
  const before = createIdentity(local, tab, newId);
  before.touch();
  const reloaded = createIdentity(local, tab, newId);
  reloaded.touch();
  assert.equal(reloaded.sessionId(), before.sessionId());
  const otherTab = createIdentity(local, memoryStorage(), newId);
  otherTab.touch();
  assert.notEqual(otherTab.sessionId(), before.sessionId());
  assert.equal(otherTab.anonymousId, before.anonymousId);
});

test('a reload after 30 idle minutes starts a new session', () => {
  const tab = memoryStorage();
  const before = createIdentity(memoryStorage(), tab, newId);
  before.touch();
  mock.timers.tick(SESSION_TIMEOUT + 1);
  const reloaded = createIdentity(memoryStorage(), tab, newId);
  reloaded.touch();
  assert.notEqual(reloaded.sessionId(), before.sessionId());
});

test('identify() refuses e-mail addresses and ids over 128 characters', () => {
  const identity = createIdentity(memoryStorage(), memoryStorage(), newId);
  assert.equal(identity.identify('user_42'), true);
  for (const refused of ['jane@example.com', ' jane.doe@mail.example.org ', 'x'.repeat(129)]) {
    assert.equal(identity.identify(refused), false, refused);
    assert.equal(identity.userId(), 'user_42');
  }
  assert.equal(identity.identify('x'.repeat(128)), true);
  assert.equal(identity.identify('@handle'), true, 'an @ without a dot after it is not an e-mail');
});

test('the user id is kept for the tab, and cleared by identify(null)', () => {
  const tab = memoryStorage();
  createIdentity(memoryStorage(), tab, newId).identify(42);
  const reloaded = createIdentity(memoryStorage(), tab, newId);
  assert.equal(reloaded.userId(), '42');
  reloaded.identify(null);
  assert.equal(reloaded.userId(), undefined);
  assert.equal(createIdentity(memoryStorage(), tab, newId).userId(), undefined);
});

test('without storage (blocked, private mode) it still works, for this page', () => {
  const broken = { get: () => null, set: () => {} };
  const identity = createIdentity(broken, broken, newId);
  identity.touch();
  assert.ok(identity.sessionId());
  assert.ok(identity.anonymousId);
});
