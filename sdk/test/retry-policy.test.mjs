import assert from 'node:assert/strict';
import { test } from 'node:test';

import { classifyResponse } from '../src/retry-policy.js';

test('2xx: done, duplicates and samples included', () => {
  assert.equal(classifyResponse(200, { success: true, count: 3 }), 'done');
  assert.equal(classifyResponse(200, { success: true, count: 3, duplicate: true }), 'done');
});

test('network errors, 429 and 5xx: retry', () => {
  for (const status of [0, 429, 500, 502, 503, 504]) assert.equal(classifyResponse(status, undefined), 'retry', String(status));
});

test('403 naming restricted types: resend the rest', () => {
  assert.equal(classifyResponse(403, { error: 'plan', restrictedTypes: ['performance'] }), 'restricted');
});

test('401, and 403 without restricted types (foreign origin): stop', () => {
  assert.equal(classifyResponse(401, { error: 'bad key' }), 'stop');
  assert.equal(classifyResponse(403, { error: 'origin' }), 'stop');
  assert.equal(classifyResponse(403, { error: 'origin', restrictedTypes: [] }), 'stop');
});

test('400 and other refusals: drop, never retried', () => {
  for (const status of [400, 404, 413, 415]) assert.equal(classifyResponse(status, { error: 'x' }), 'drop', String(status));
});
