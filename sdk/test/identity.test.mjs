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

test('identify() refuses e-mail addresses in any disguise and ids over 128 characters', () => {
  const identity = createIdentity(memoryStorage(), memoryStorage(), newId);
  assert.equal(identity.identify('user_42'), true);
  const disguised = ['jane@example.com', ' jane.doe@mail.example.org ', '<alice@example.com>', 'alice%40example.com', 'alice\uff20example.com', 'alice\ufe6bexample.com', '@handle'];
  for (const refused of [...disguised, 'x'.repeat(129)]) {
    assert.equal(identity.identify(refused), false, refused);
    assert.equal(identity.userId(), 'user_42');
  }
  assert.equal(identity.identify('x'.repeat(128)), true);
  for (const opaque of ['3b241101-e2bb-4255-8caf-4136c566a962', 'alice%20example.com', '40']) {
    assert.equal(identity.identify(opaque), true, opaque);
  }
});

test('a user id an earlier tracker kept is dropped if the service would refuse it', () => {
  const tab = memoryStorage();
  tab.set('egis_uid', '@handle');
  assert.equal(createIdentity(memoryStorage(), tab, newId).userId(), undefined);
  tab.set('egis_uid', 'user_42');
  assert.equal(createIdentity(memoryStorage(), tab, newId).userId(), 'user_42');
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

test('the anonymous id is kept with its creation time, and renewed once 13 months old', () => {
  mock.timers.setTime(Date.UTC(2025, 0, 15, 12));
  const local = memoryStorage();
  const first = createIdentity(local, memoryStorage(), newId).anonymousId;
  assert.equal(local.items.get('egis_aid'), first);
  assert.equal(local.items.get('egis_aid_created'), String(Date.UTC(2025, 0, 15, 12)));
  // 13 months after 15 January 2025, 12:00 (the calendar's months, in local time).
  const renewal = new Date(Date.UTC(2025, 0, 15, 12));
  renewal.setMonth(renewal.getMonth() + 13);
  assert.equal(renewal.getUTCFullYear() * 100 + renewal.getUTCMonth() + 1, 202602);
  mock.timers.setTime(renewal.getTime() - 1);
  assert.equal(createIdentity(local, memoryStorage(), newId).anonymousId, first, 'a millisecond before: kept');
  assert.equal(local.items.get('egis_aid_created'), String(Date.UTC(2025, 0, 15, 12)), 'its creation time unchanged');
  mock.timers.setTime(renewal.getTime());
  const renewed = createIdentity(local, memoryStorage(), newId).anonymousId;
  assert.notEqual(renewed, first);
  assert.equal(local.items.get('egis_aid'), renewed);
  assert.equal(local.items.get('egis_aid_created'), String(renewal.getTime()), 'a new 13 months start');
  mock.timers.tick(1000);
  assert.equal(createIdentity(local, memoryStorage(), newId).anonymousId, renewed);
});

test('an anonymous id stored without a creation time, or with a broken one, is renewed', () => {
  mock.timers.setTime(Date.UTC(2025, 5, 1));
  for (const created of [undefined, '', 'soon']) {
    const local = memoryStorage(created === undefined ? { egis_aid: 'old' } : { egis_aid: 'old', egis_aid_created: created });
    const { anonymousId } = createIdentity(local, memoryStorage(), newId);
    assert.notEqual(anonymousId, 'old', String(created));
    assert.equal(local.items.get('egis_aid_created'), String(Date.now()));
  }
});

test('storage-free (ids "-", a storage that holds nothing): the user id lasts for the page only', () => {
  const nothing = { get: () => undefined, set: () => {} };
  const identity = createIdentity(nothing, nothing, () => '-');
  identity.touch();
  assert.equal(identity.anonymousId, '-');
  assert.equal(identity.sessionId(), '-');
  identity.identify('user_42');
  assert.equal(identity.userId(), 'user_42');
  mock.timers.tick(SESSION_TIMEOUT + 1);
  identity.touch();
  assert.equal(identity.sessionId(), '-');
  assert.equal(createIdentity(nothing, nothing, () => '-').userId(), undefined, 'the next page has none');
});
