// The query app: draws a `query` result (its structuredContent) as a line over time, bars, or
// figures, with a switch among the returned metrics and, when the host lets the app call tools,
// a switch of period that asks `query` again with the same arguments.
import { dimensionLabel, changeOf, metricLabel, numberFormat } from './format.js';
import { bars, chartKind, series } from './shape.js';
import { barChart, lineChart } from './charts.js';
import { el, figuresTable, switchGroup } from './dom.js';
import { askAgain, canAskAgain, notes, rangeLine, startView } from './view.js';

const PERIODS = [['7d', '7 days'], ['30d', '30 days'], ['90d', '90 days'], ['12mo', '12 months']];

const state = startView('query', render);
state.metric = 0;

function render(view) {
  const result = view.result;
  const kind = chartKind(result);
  const format = numberFormat(view.locale);
  const m = Math.min(view.metric, (result.metrics?.length ?? 1) - 1);
  const metric = result.metrics?.[m];
  const range = `${result.from} to ${result.to}`;
  const parts = [header(result, m, format, range)];
  if (result.metrics?.length > 1) parts.push(metricSwitch(result, m));
  if (kind === 'empty') {
    parts.push(el('p', { class: 'note', role: 'status', text: `No data for ${result.site ?? 'this site'} from ${range} matches this query.` }));
  } else if (kind === 'figures') {
    parts.push(figures(result, format));
  } else {
    parts.push(kind === 'line' ? timeChart(view, result, m, format, range) : breakdown(view, result, m, format, range));
  }
  if (canAskAgain(view)) parts.push(periodSwitch(view));
  return [...parts, ...notes(result)];

  function metricSwitch() {
    return switchGroup('Metric shown', result.metrics.map((name, i) => [i, metricLabel(name)]), m,
      (i) => { view.metric = i; view.redraw(); });
  }

  function header() {
    const total = result.totals?.[m];
    const line = el('p', { class: 'headline' }, el('strong', { text: metricLabel(metric) }));
    if (total !== null && total !== undefined && kind !== 'empty') line.append(` ${format.figure(metric, total)}`);
    const before = result.comparison?.totals?.[m];
    if (result.comparison && kind !== 'empty' && total !== null && total !== undefined) {
      const change = changeOf(metric, total, before);
      const [lead, shown, tail] = format.against(metric, before, change, result.comparison);
      line.append(lead, el('span', { class: `change ${change > 0 ? 'up' : change < 0 ? 'down' : ''}`, text: shown }), tail);
    }
    return el('header', {}, line, rangeLine(result));
  }
}

function timeChart(view, result, m, format, range) {
  const metric = result.metrics[m];
  const points = series(result, m);
  const compared = Boolean(result.comparison);
  const name = metricLabel(metric);
  const grain = dimensionLabel(result.dimensions[0]).toLowerCase();
  const label = `Line chart: ${name} per ${grain}, ${range}${compared ? `, the comparison period ${result.comparison.from} to ${result.comparison.to} dashed` : ''}.`;
  const headers = [dimensionLabel(result.dimensions[0]), name, ...(compared ? ['Comparison', 'Change'] : [])];
  const rows = points.map((p) => [p.label, format.figure(metric, p.value),
    ...(compared ? [format.figure(metric, p.before), format.change(metric, changeOf(metric, p.value, p.before), p.before)] : [])]);
  return el('figure', {},
    lineChart({ width: view.width, series: points, format: (v) => format.axis(metric, v), label }),
    compared ? legend(result) : null,
    figuresTable(`${name} per ${grain}, ${range}`, headers, rows));
}

function legend(result) {
  return el('p', { class: 'legend' },
    el('span', { class: 'key now' }), `${result.from} to ${result.to} `,
    el('span', { class: 'key before' }), `${result.comparison.from} to ${result.comparison.to}`);
}

function breakdown(view, result, m, format, range) {
  const metric = result.metrics[m];
  const name = metricLabel(metric);
  const by = result.dimensions.map(dimensionLabel).join(' · ');
  const shaped = bars(result, m);
  const compared = shaped.bars.some((b) => b.change !== undefined);
  const label = `Bar chart: ${name} by ${by}, ${range}.`;
  const rows = shaped.bars.map((b) => [b.label, format.figure(metric, b.value),
    ...(compared ? [b.rest ? '' : format.change(metric, b.change, b.before)] : [])]);
  return el('figure', {},
    barChart({ width: view.width, bars: shaped.bars, format: (v) => format.figure(metric, v), label }),
    shaped.more ? el('p', { class: 'note', text: `${shaped.more} more rows not shown.` }) : null,
    result.total_rows > result.results.length ? el('p', { class: 'note', text: `${result.results.length} of ${result.total_rows} rows returned.` }) : null,
    figuresTable(`${name} by ${by}, ${range}`, [by, name, ...(compared ? ['Change'] : [])], rows));
}

function figures(result, format) {
  const row = result.results[0];
  return el('dl', { class: 'figures' }, result.metrics.map((metric, i) => el('div', {},
    el('dt', { text: metricLabel(metric) }),
    el('dd', { text: format.figure(metric, row.metrics[i]) },
      row.comparison ? el('span', { class: 'change', text: ` (${format.change(metric, row.comparison.change[i], row.comparison.metrics[i])})` }) : null))));
}

// Another period through the host: the same arguments, `period` instead of the range.
function periodSwitch(view) {
  return switchGroup('Period', PERIODS, view.args.period, (period) => {
    const { from, to, ...args } = view.args;
    askAgain(view, 'query', { ...args, period }, `Asking for the last ${period}…`);
  }, 'periods');
}
