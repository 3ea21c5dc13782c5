// From a tool's structuredContent to what a chart draws: pure functions, unit-tested in node.
import { ADDITIVE, valueLabel } from './format.js';

export const TOP_BARS = 8;

// The chart a `query` result calls for: 'empty' (no rows), 'figures' (no dimension), 'line' (one
// time:* dimension) or 'bars' (any other breakdown).
export function chartKind(result) {
  if (!result?.results?.length) return 'empty';
  const dims = result.dimensions ?? [];
  if (dims.length === 0) return 'figures';
  if (dims.length === 1 && dims[0].startsWith('time:')) return 'line';
  return 'bars';
}

function addDays(day, days) {
  const moved = new Date(`${day}T00:00:00Z`);
  moved.setUTCDate(moved.getUTCDate() + days);
  return moved.toISOString().slice(0, 10);
}

// The local minutes from `from` to `to` (inclusive), YYYY-MM-DDTHH:MM: days (the whole of
// each) or a rolling window's local instants with their offset (2026-12-01T22:25:03+01:00),
// whose wall clock names the minutes.
function minutes(from, to, limit) {
  const first = from.length === 10 ? `${from}T00:00` : from.slice(0, 16);
  const last = to.length === 10 ? `${to}T23:59` : to.slice(0, 16);
  const out = [];
  for (let at = new Date(`${first}:00Z`); out.length < limit; at = new Date(at.getTime() + 60000)) {
    const key = at.toISOString().slice(0, 16);
    if (key > last) break;
    out.push(key);
  }
  return out;
}

// Every bucket of `grain` from `from` to `to` (inclusive), as the query tool names them:
// YYYY-MM-DD, a week's Monday, YYYY-MM, YYYY-MM-DDTHH:00, YYYY-MM-DDTHH:MM. `from` and `to`
// are days, or a rolling window's local instants.
export function buckets(grain, from, to, limit = 2000) {
  if (grain === 'minute') return minutes(from, to, limit);
  [from, to] = [from.slice(0, 10), to.slice(0, 10)];
  const out = [];
  if (grain === 'month') {
    let [year, month] = from.split('-').map(Number);
    const [lastYear, lastMonth] = to.split('-').map(Number);
    while ((year < lastYear || (year === lastYear && month <= lastMonth)) && out.length < limit) {
      out.push(`${year}-${String(month).padStart(2, '0')}`);
      month += 1;
      if (month > 12) { month = 1; year += 1; }
    }
    return out;
  }
  let day = from;
  if (grain === 'week') day = addDays(from, -((new Date(`${from}T00:00:00Z`).getUTCDay() + 6) % 7));
  const step = grain === 'week' ? 7 : 1;
  for (; day <= to && out.length < limit; day = addDays(day, step)) {
    if (grain !== 'hour') { out.push(day); continue; }
    for (let hour = 0; hour < 24; hour += 1) out.push(`${day}T${String(hour).padStart(2, '0')}:00`);
  }
  return out;
}

// The points of a time series for metric `m` (an index into result.metrics): every bucket of the
// period, an absent bucket read as 0 for a count (the tool leaves out buckets without data) and
// as a gap (null) for a rate or an average. `before` is the comparison period's value, shifted
// onto the same bucket by the tool.
export function series(result, m) {
  const grain = result.dimensions[0].slice('time:'.length);
  const metric = result.metrics[m];
  const absent = ADDITIVE.has(metric) ? 0 : null;
  const rows = new Map(result.results.map((row) => [row.dimensions[0], row]));
  const compared = Boolean(result.comparison);
  let keys = buckets(grain, result.from, result.to);
  if (!keys.length || rows.size > keys.length) keys = [...rows.keys()].sort();
  return keys.map((key) => {
    const row = rows.get(key);
    return {
      label: key,
      value: row ? row.metrics[m] : absent,
      before: compared ? (row?.comparison ? row.comparison.metrics[m] : absent) : undefined,
    };
  });
}

// The bars of a breakdown for metric `m`: the top rows by that metric, and the rest summed into
// one bar when the metric adds up over rows (a rate or an average of the rest is not their sum,
// so those keep only the top rows and say how many more there are).
export function bars(result, m, top = TOP_BARS) {
  const metric = result.metrics[m];
  const rows = result.results.map((row) => ({
    label: row.dimensions.map(valueLabel).join(' · '),
    value: row.metrics[m],
    change: row.comparison ? row.comparison.change[m] : undefined,
    before: row.comparison ? row.comparison.metrics[m] : undefined,
  }));
  rows.sort((a, b) => (b.value ?? -Infinity) - (a.value ?? -Infinity));
  const shown = rows.slice(0, top);
  const rest = rows.slice(top);
  if (!rest.length) return { bars: shown, more: 0 };
  if (!ADDITIVE.has(metric)) return { bars: shown, more: rest.length };
  const sum = rest.reduce((total, row) => total + (row.value ?? 0), 0);
  const rounded = metric === 'percentage' ? Math.round(sum * 10) / 10 : sum;
  return { bars: [...shown, { label: `Other (${rest.length})`, value: rounded, rest: true }], more: 0 };
}

// The funnel's steps as drawn: each step's share of step 1 and what dropped off before it.
export function funnelSteps(result) {
  return (result?.steps ?? []).map((step, index) => ({
    label: step.label, count: step.count, share: step.conversion_rate,
    stepShare: index ? step.step_conversion_rate : null, dropoff: index ? step.dropoff : null,
  }));
}

// --- retention: the cohort table -----------------------------------------------------------

// Rates shade a cell in SHADES steps, finer where most rates after a cohort's own interval lie
// (under 25 %): step k holds the rates up to SHADE_TOPS[k] %, 0 % is step 0, and a cohort without
// members (a null rate) has no shade.
export const SHADE_TOPS = [0, 2, 5, 10, 15, 25, 50, 100];
export const SHADES = SHADE_TOPS.length - 1;

export function shadeLevel(rate) {
  if (rate === null || rate === undefined) return null;
  const level = SHADE_TOPS.findIndex((top) => rate <= top + 1e-9);
  return level === -1 ? SHADES : level;
}

// The first day of the interval `n` intervals after `first` (a cohort as the tool names it: a
// day, a week's Monday, or YYYY-MM for a month).
export function addInterval(first, n, interval) {
  if (interval === 'month') {
    const [year, month] = first.split('-').map(Number);
    const index = year * 12 + month - 1 + n;
    return `${Math.floor(index / 12)}-${String((index % 12) + 1).padStart(2, '0')}`;
  }
  return addDays(first, interval === 'week' ? 7 * n : n);
}

const sum = (values) => values.reduce((total, value) => total + value, 0);

// The table a `retention` result calls for: a row per cohort with a cell per interval after it
// (0 = the cohort's own), absent where the interval has not started (later cohorts have shorter
// lists); a cell in the interval holding now is `current` (it counts what happened so far). The
// average row has the tool's rates, and beside them what they are made of: the visitors back,
// summed over the cohorts that have the cell, out of those cohorts' visitors.
export function cohortGrid(result) {
  const cohorts = result?.cohorts ?? [];
  const interval = result?.interval ?? 'week';
  const averageRates = result?.average?.retention_rate ?? [];
  const columns = Math.max(0, averageRates.length, ...cohorts.map((c) => c.retained.length));
  const current = result?.current_interval ?? null;
  const rows = cohorts.map((c) => ({
    cohort: c.cohort,
    visitors: c.visitors,
    cells: Array.from({ length: columns }, (_, n) => {
      if (n >= c.retained.length) return { n, absent: true };
      const rate = c.retention_rate[n] ?? null;
      return { n, retained: c.retained[n], rate, level: shadeLevel(rate),
        current: current !== null && addInterval(c.cohort, n, interval) === current };
    }),
  }));
  const average = {
    visitors: sum(cohorts.map((c) => c.visitors)),
    cells: Array.from({ length: columns }, (_, n) => {
      const having = cohorts.filter((c) => n < c.retained.length);
      if (!having.length) return { n, absent: true };
      const rate = averageRates[n] ?? null;
      return { n, rate, level: shadeLevel(rate), retained: sum(having.map((c) => c.retained[n])),
        visitors: sum(having.map((c) => c.visitors)) };
    }),
  };
  return { interval, columns, rows, average, empty: !cohorts.some((c) => c.visitors > 0) };
}

// --- paths: the steps as columns, the links between them ---------------------------------------

// What a path's value is: a page, a goal (`goal:<name>`), the values beyond the limit
// (`(other)`), or a visit's end (`(exit)` forward, `(entry)` backward).
export function valueKind(value) {
  if (value === '(exit)' || value === '(entry)') return 'end';
  if (value === '(other)') return 'other';
  return String(value).startsWith('goal:') ? 'goal' : 'page';
}

const LAST = { page: 0, goal: 0, other: 1, end: 2 };

// The columns of a `paths` result in step order (0 = the anchor, its one value holding every
// visit): each step's values by visits (ties by value, as the tool keeps them), `(other)` and
// then `(exit)`/`(entry)` last. `order` lists the columns as drawn, in time order: forward the
// anchor first, backward last (the steps before it run right to left). Each link names its rows:
// `from` in step k-1's column, `to` in step k's.
export function pathColumns(result) {
  const anchor = { value: result?.anchor ?? '', visits: result?.visits ?? 0, share: 100 };
  const ordered = (values) => [...values].sort((a, b) => LAST[valueKind(a.value)] - LAST[valueKind(b.value)]
    || b.visits - a.visits || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
  const columns = [{ step: 0, values: [anchor] },
    ...(result?.steps ?? []).map((s) => ({ step: s.step, values: ordered(s.values) }))]
    .map((column) => ({ ...column, values: column.values.map((v) => ({ ...v, kind: valueKind(v.value) })) }));
  const rows = columns.map((column) => new Map(column.values.map((v, i) => [v.value, i])));
  const links = (result?.links ?? []).map((link) => ({ ...link,
    fromRow: rows[link.step - 1]?.get(link.from), toRow: rows[link.step]?.get(link.to) }))
    .filter((link) => link.fromRow !== undefined && link.toRow !== undefined);
  const backward = result?.direction === 'backward';
  const order = columns.map((_, i) => (backward ? columns.length - 1 - i : i));
  return { backward, anchor, columns, links, order, empty: !(anchor.visits > 0) };
}

// Which of `count` columns (positions in time order) each band of at most `perBand` shows, when
// they do not fit side by side: each band starts with the column the one before ended with, so
// that every pair of consecutive steps, and the links between them, is drawn in some band.
export function bands(count, perBand) {
  const per = Math.max(2, perBand);
  if (count <= per) return [Array.from({ length: count }, (_, i) => i)];
  const out = [];
  for (let start = 0; start < count - 1; start += per - 1) {
    out.push(Array.from({ length: Math.min(per, count - start) }, (_, i) => start + i));
  }
  return out;
}

// Top paths as read in time order: forward the anchor then the path, backward the path reversed
// then the anchor.
export function topPaths(result) {
  const backward = result?.direction === 'backward';
  return (result?.top_paths ?? []).map(({ path, visits }) => ({
    nodes: backward ? [...path].reverse().concat(result.anchor) : [result.anchor, ...path], visits,
  }));
}
