import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bars, buckets, chartKind, funnelSteps, series } from '../src/shape.js';

const row = (dimensions, metrics, comparison) => ({ dimensions, metrics, ...(comparison && { comparison }) });

test('the chart a result calls for', () => {
  assert.equal(chartKind({ dimensions: ['time:day'], results: [] }), 'empty');
  assert.equal(chartKind({ dimensions: [], results: [row([], [1])] }), 'figures');
  assert.equal(chartKind({ dimensions: ['time:week'], results: [row(['2026-03-02'], [1])] }), 'line');
  assert.equal(chartKind({ dimensions: ['visit:source'], results: [row(['Google'], [1])] }), 'bars');
  assert.equal(chartKind({ dimensions: ['time:day', 'visit:source'], results: [row(['2026-03-02', 'x'], [1])] }), 'bars');
});

test('buckets name every day, Monday, month and hour of the period as the tool does', () => {
  assert.deepEqual(buckets('day', '2026-02-27', '2026-03-02'), ['2026-02-27', '2026-02-28', '2026-03-01', '2026-03-02']);
  assert.deepEqual(buckets('week', '2026-03-04', '2026-03-17'), ['2026-03-02', '2026-03-09', '2026-03-16']);
  assert.deepEqual(buckets('month', '2025-11-15', '2026-02-01'), ['2025-11', '2025-12', '2026-01', '2026-02']);
  const hours = buckets('hour', '2026-03-01', '2026-03-01');
  assert.equal(hours.length, 24);
  assert.deepEqual([hours[0], hours[23]], ['2026-03-01T00:00', '2026-03-01T23:00']);
});

test('a series fills absent buckets: 0 for a count, a gap for a rate', () => {
  const result = {
    from: '2026-03-01', to: '2026-03-03', dimensions: ['time:day'], metrics: ['visitors', 'bounce_rate'],
    results: [row(['2026-03-01'], [4, 50], { metrics: [2, 40], change: [100, 10] }), row(['2026-03-03'], [6, 25], { metrics: [3, null], change: [100, null] })],
    comparison: { from: '2026-02-26', to: '2026-02-28', totals: [5, 30] },
  };
  assert.deepEqual(series(result, 0), [
    { label: '2026-03-01', value: 4, before: 2 },
    { label: '2026-03-02', value: 0, before: 0 },
    { label: '2026-03-03', value: 6, before: 3 },
  ]);
  assert.deepEqual(series(result, 1).map((p) => [p.value, p.before]), [[50, 40], [null, null], [25, null]]);
  delete result.comparison;
  assert.equal(series(result, 0)[0].before, undefined);
});

test('bars: the top rows, the rest summed when the metric adds up', () => {
  const results = Array.from({ length: 11 }, (_, i) => row([i === 10 ? null : `s${i}`], [i + 1, 10 + i]));
  const counted = bars({ metrics: ['visits', 'bounce_rate'], results }, 0);
  assert.deepEqual(counted.bars.map((b) => [b.label, b.value]), [
    ['(none)', 11], ['s9', 10], ['s8', 9], ['s7', 8], ['s6', 7], ['s5', 6], ['s4', 5], ['s3', 4], ['Other (3)', 6],
  ]);
  assert.equal(counted.more, 0);
  const rates = bars({ metrics: ['visits', 'bounce_rate'], results }, 1);
  assert.equal(rates.bars.length, 8);
  assert.equal(rates.more, 3);
  assert.ok(!rates.bars.some((b) => b.rest));
  const few = bars({ metrics: ['visits'], results: results.slice(0, 3) }, 0);
  assert.deepEqual([few.bars.length, few.more], [3, 0]);
});

test('funnel steps keep the tool figures', () => {
  const steps = funnelSteps({ steps: [
    { label: 'Home', count: 10, conversion_rate: 100, step_conversion_rate: null, dropoff: null },
    { label: 'Pricing', count: 4, conversion_rate: 40, step_conversion_rate: 40, dropoff: 6 },
  ] });
  assert.deepEqual(steps[1], { label: 'Pricing', count: 4, share: 40, stepShare: 40, dropoff: 6 });
  assert.equal(steps[0].dropoff, null);
});

test('bars keep the comparison period\'s figure beside the change', () => {
  const shaped = bars({ metrics: ['visits'], results: [row(['a'], [5], { metrics: [0], change: [null] })] }, 0);
  assert.deepEqual(shaped.bars[0], { label: 'a', value: 5, change: null, before: 0 });
});
