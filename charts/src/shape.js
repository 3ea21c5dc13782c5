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

// Every bucket of `grain` from `from` to `to` (inclusive), as the query tool names them:
// YYYY-MM-DD, a week's Monday, YYYY-MM, YYYY-MM-DDTHH:00.
export function buckets(grain, from, to, limit = 2000) {
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
