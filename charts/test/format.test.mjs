import { test } from 'node:test';
import assert from 'node:assert/strict';
import { changeOf, dimensionLabel, duration, metricLabel, numberFormat } from '../src/format.js';

test('figures read in the units of the tools', () => {
  const { figure } = numberFormat('en-US');
  assert.equal(figure('visitors', 12345), '12,345');
  assert.equal(figure('bounce_rate', 40), '40.0%');
  assert.equal(figure('percentage', 12.34), '12.3%');
  assert.equal(figure('views_per_visit', 1.5), '1.50');
  assert.equal(figure('visit_duration', 3725), '1h 02m');
  assert.equal(figure('visits', null), '–');
  assert.equal(numberFormat('de-DE').figure('visitors', 12345), '12.345');
});

test('a change reads as the tools compute it: percent, or points for a rate', () => {
  const { change } = numberFormat('en-US');
  assert.equal(change('visitors', changeOf('visitors', 37, 29)), '+27.6%');
  assert.equal(change('visitors', changeOf('visitors', 20, 40)), '−50.0%');
  assert.equal(change('bounce_rate', changeOf('bounce_rate', 40.5, 42)), '−1.5 pts');
  assert.equal(change('visits', changeOf('visits', 5, 0)), 'no base to compare');
  assert.equal(change('visits', 0), '±0.0%');
});

test('durations and names', () => {
  assert.deepEqual([duration(42), duration(65), duration(3600)], ['42s', '1m 05s', '1h 00m']);
  assert.equal(metricLabel('views_per_visit'), 'Views per visit');
  assert.deepEqual(['time:day', 'visit:utm_source', 'event:page', 'event:props:plan'].map(dimensionLabel),
    ['Day', 'Utm source', 'Page', 'Property plan']);
});
