import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  addInterval, bands, bars, buckets, chartKind, cohortGrid, funnelSteps, pathColumns, series, shadeLevel, topPaths,
} from '../src/shape.js';

// Hand-made results of the shapes the tools answer (the screenshots in docs/img/ draw them).
const fixture = (name) => JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), 'utf8'));

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

test('buckets name the minutes of a rolling window, and of a day', () => {
  assert.deepEqual(buckets('minute', '2026-12-01T23:57:03+01:00', '2026-12-02T00:02:03+01:00'),
    ['2026-12-01T23:57', '2026-12-01T23:58', '2026-12-01T23:59', '2026-12-02T00:00',
      '2026-12-02T00:01', '2026-12-02T00:02']);
  const day = buckets('minute', '2026-03-01', '2026-03-01');
  assert.equal(day.length, 24 * 60);
  assert.deepEqual([day[0], day[day.length - 1]], ['2026-03-01T00:00', '2026-03-01T23:59']);
  assert.deepEqual(buckets('hour', '2026-12-01T23:57:03+01:00', '2026-12-02T00:02:03+01:00').slice(0, 2),
    ['2026-12-01T00:00', '2026-12-01T01:00']);
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

test('a rate\'s shade: 0 for 0 %, then seven steps, finer below 25 %; none without a rate', () => {
  assert.deepEqual([0, 0.1, 2, 2.1, 5, 9.9, 10, 15, 15.1, 25, 49.9, 50, 50.1, 100].map(shadeLevel),
    [0, 1, 1, 2, 2, 3, 3, 4, 5, 5, 6, 6, 7, 7]);
  assert.equal(shadeLevel(null), null);
});

test('the interval n after a cohort, as the tool names intervals', () => {
  assert.equal(addInterval('2026-10-26', 1, 'week'), '2026-11-02');
  assert.equal(addInterval('2026-12-31', 1, 'day'), '2027-01-01');
  assert.deepEqual([0, 1, 2, 14].map((n) => addInterval('2026-11', n, 'month')), ['2026-11', '2026-12', '2027-01', '2028-01']);
});

test('the cohort grid: a cell per interval, absent before it starts, the current one marked', () => {
  const result = fixture('retention');
  const grid = cohortGrid(result);
  assert.equal(grid.columns, 8); // intervals 0 to 7
  assert.equal(grid.empty, false);
  assert.deepEqual(grid.rows.map((r) => r.cells.filter((c) => !c.absent).length), [8, 7, 6, 5, 4, 3, 2, 1]);
  const [first, , , , , , , last] = grid.rows;
  assert.deepEqual(first.cells[1], { n: 1, retained: 43, rate: 18.1, level: 5, current: false });
  assert.deepEqual(last.cells[1], { n: 1, absent: true });
  // The week of 2026-11-23 holds now: week 7 of the first cohort, week 0 of the last, and no
  // other cell of either.
  assert.deepEqual(grid.rows.map((r) => r.cells.findIndex((c) => c.current)), [7, 6, 5, 4, 3, 2, 1, 0]);
  assert.equal(grid.rows.flatMap((r) => r.cells).filter((c) => c.current).length, 8);
});

test('the average row: the tool\'s rates over the cohorts that have the cell, and what they are made of', () => {
  const result = fixture('retention');
  const grid = cohortGrid(result);
  const visitors = result.cohorts.map((c) => c.visitors);
  assert.equal(grid.average.visitors, visitors.reduce((a, b) => a + b));
  assert.deepEqual(grid.average.cells.map((c) => c.rate), result.average.retention_rate);
  // Week 6: the first two cohorts only (18 of 238 and 10 of 251 back: 28 of 489).
  assert.deepEqual(grid.average.cells[6], { n: 6, rate: 5.7, level: 3, retained: 28, visitors: 489 });
  assert.equal(Math.round((1000 * 28) / 489) / 10, result.average.retention_rate[6]);
  assert.deepEqual(grid.average.cells[7], { n: 7, rate: 3.4, level: 2, retained: 8, visitors: 238 });
});

test('a cohort without members has 0s and no rate; no members at all is the empty table', () => {
  const result = {
    interval: 'month', current_interval: '2026-12', average: { retention_rate: [100, null] },
    cohorts: [{ cohort: '2026-11', visitors: 0, retained: [0, 0], retention_rate: [null, null] }],
  };
  const grid = cohortGrid(result);
  assert.equal(grid.empty, true);
  assert.deepEqual(grid.rows[0].cells[1], { n: 1, retained: 0, rate: null, level: null, current: true });
  assert.deepEqual(cohortGrid({ interval: 'day', cohorts: [], average: { retention_rate: [] } }),
    { interval: 'day', columns: 0, rows: [], average: { visitors: 0, cells: [] }, empty: true });
  result.cohorts.push({ cohort: '2026-12', visitors: 3, retained: [3], retention_rate: [100] });
  assert.equal(cohortGrid(result).empty, false);
});

test('paths forward: the anchor, then each step\'s values, (other) and (exit) last', () => {
  const result = fixture('paths');
  const paths = pathColumns(result);
  assert.equal(paths.backward, false);
  assert.deepEqual(paths.order, [0, 1, 2, 3]);
  assert.deepEqual(paths.columns[0].values, [{ value: '/pricing', visits: 406, share: 100, kind: 'page' }]);
  const step1 = paths.columns[1].values;
  assert.deepEqual(step1.map((v) => [v.value, v.kind]), [
    ['/signup', 'page'], ['/docs', 'page'], ['/', 'page'], ['/features', 'page'], ['/contact', 'page'],
    ['/blog/launch-week-2026-what-we-shipped', 'page'], ['(other)', 'other'], ['(exit)', 'end']]);
  assert.equal(step1.reduce((total, v) => total + v.visits, 0), result.visits, 'every visit takes a step 1');
  assert.deepEqual(paths.columns[2].values[0], { value: 'goal:Signup', visits: 58, share: 14.3, kind: 'goal' });
  // Each link names its rows in the two columns; none is lost.
  assert.equal(paths.links.length, result.links.length);
  for (const link of paths.links) {
    assert.equal(paths.columns[link.step - 1].values[link.fromRow].value, link.from);
    assert.equal(paths.columns[link.step].values[link.toRow].value, link.to);
  }
  const fromDocs = paths.links.find((l) => l.step === 2 && l.from === '/docs' && l.to === '/docs/install');
  assert.deepEqual([fromDocs.fromRow, fromDocs.toRow, fromDocs.visits], [1, 2, 30]);
  // The visits through a value go on to the next step, or end there: (exit) goes nowhere.
  for (const step of [2, 3]) {
    for (const value of paths.columns[step - 1].values) {
      const out = paths.links.filter((l) => l.step === step && l.from === value.value).reduce((t, l) => t + l.visits, 0);
      assert.equal(out, value.kind === 'end' ? 0 : value.visits, `${value.value} at step ${step - 1}`);
    }
  }
  assert.deepEqual(topPaths(result)[1], { nodes: ['/pricing', '/signup', 'goal:Signup', '(exit)'], visits: 58 });
});

test('paths backward: the steps run leftwards from the anchor, (entry) last, top paths in time order', () => {
  const result = fixture('paths-backward');
  const paths = pathColumns(result);
  assert.equal(paths.backward, true);
  assert.deepEqual(paths.order, [3, 2, 1, 0]);
  assert.deepEqual(paths.columns[0].values[0].kind, 'goal');
  assert.deepEqual(paths.columns[2].values.map((v) => v.value), ['/pricing', '/features', '/', '(entry)']);
  assert.deepEqual(topPaths(result)[0], { nodes: ['/', '/pricing', '/signup', 'goal:Signup'], visits: 41 });
  assert.deepEqual(topPaths(result)[1].nodes, ['(entry)', '/pricing', '/signup', 'goal:Signup']);
});

test('a link to a value no step lists is left out; no visits is the empty chart', () => {
  const paths = pathColumns({ anchor: '(entry)', visits: 2, direction: 'forward',
    steps: [{ step: 1, values: [{ value: '/', visits: 2, share: 100 }] }],
    links: [{ step: 1, from: '(entry)', to: '/', visits: 2 }, { step: 2, from: '/', to: '/x', visits: 1 }] });
  assert.deepEqual(paths.links.map((l) => [l.step, l.fromRow, l.toRow]), [[1, 0, 0]]);
  assert.equal(paths.columns[0].values[0].kind, 'end');
  assert.equal(pathColumns({ anchor: '/pricing', visits: 0, steps: [], links: [] }).empty, true);
});

test('columns that do not fit side by side wrap into bands, each starting with the last one\'s end', () => {
  assert.deepEqual(bands(4, 4), [[0, 1, 2, 3]]);
  assert.deepEqual(bands(4, 2), [[0, 1], [1, 2], [2, 3]]);
  assert.deepEqual(bands(11, 4), [[0, 1, 2, 3], [3, 4, 5, 6], [6, 7, 8, 9], [9, 10]]);
  assert.deepEqual(bands(3, 1), [[0, 1], [1, 2]], 'never fewer than two columns a band');
});
