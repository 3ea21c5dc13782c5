import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';

import { createApi, inactiveApi, METHODS } from '../src/api.js';

let warnings;
let recorded;
let api;
beforeEach((t) => {
  warnings = [];
  recorded = [];
  t.mock.method(console, 'warn', (...args) => warnings.push(args.join(' ')));
  const identity = { identify: (id) => !String(id).includes('@') };
  api = createApi({ record: (...args) => recorded.push(args), pageView: () => {}, identity, delivery: { flush: async () => 'flushed' } });
});

test('the six methods, in the tracker and when tracking is off', async () => {
  assert.deepEqual(Object.keys(api).sort(), [...METHODS].sort());
  const inactive = inactiveApi();
  assert.deepEqual(Object.keys(inactive).sort(), [...METHODS].sort());
  for (const method of METHODS) assert.equal(await inactive[method]('x'), undefined);
  assert.equal(await api.flush(), 'flushed');
});

test('trackGoal and track record goal and custom events with their name and properties', () => {
  api.trackGoal('signup', { plan: 'pro' });
  api.track('video_play', undefined);
  assert.deepEqual(recorded, [
    ['goal', 'signup', { plan: 'pro' }],
    ['custom', 'video_play', {}],
  ]);
});

test('a goal or event without a name is not recorded', () => {
  api.trackGoal('');
  api.track();
  assert.deepEqual(recorded, []);
  assert.equal(warnings.length, 2);
});

test('trackError records message, stack and context', () => {
  api.trackError(new Error('boom'), { step: 2 });
  const [[type, name, properties]] = recorded;
  assert.equal(type, 'error');
  assert.equal(name, 0);
  assert.equal(properties.message, 'boom');
  assert.deepEqual(properties.context, { step: 2 });
});

test('identify warns when refused', () => {
  api.identify('user_1');
  assert.deepEqual(warnings, []);
  api.identify('jane@example.com');
  assert.match(warnings[0], /identify: not an e-mail/);
});
