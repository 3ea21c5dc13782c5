// The retention app: draws a `retention` result (its structuredContent) as the cohort table, each
// cell shaded by its rate, with a switch between the rates and the visitors back and, when the
// host lets the app call tools, a switch of interval that asks `retention` again.
import { cohortLabel, intervalWords, numberFormat, returnLabel } from './format.js';
import { SHADE_TOPS, cohortGrid } from './shape.js';
import { cohortChart } from './charts.js';
import { el, figuresTable, switchGroup } from './dom.js';
import { askAgain, canAskAgain, notes, rangeLine, startView } from './view.js';

const MODES = [['rate', 'Retention rate'], ['count', 'Visitors back']];
const INTERVALS = [['day', 'Days'], ['week', 'Weeks'], ['month', 'Months']];

const state = startView('retention', render);
state.mode = 'rate';

function render(view) {
  const result = view.result;
  const grid = cohortGrid(result);
  const words = intervalWords(grid.interval);
  const format = numberFormat(view.locale);
  const range = `${result.from} to ${result.to}`;
  const by = result.cohort === 'any_visit' ? 'a visit' : 'their first visit';
  const head = el('header', {},
    el('p', { class: 'headline' }, el('strong', { text: 'Retention' }),
      ` of visitors by the ${words.name.toLowerCase()} of ${by}, back on ${returnLabel(result.return_on)}`),
    rangeLine(result));
  const parts = [head];
  if (grid.empty) {
    parts.push(el('p', { class: 'note', role: 'status', text: `No visitors in ${words.adjective} cohorts from ${range}.` }));
  } else {
    parts.push(switchGroup('Metric shown', MODES, view.mode, (mode) => { view.mode = mode; view.redraw(); }),
      table(view, result, grid, words, format, range));
  }
  if (canAskAgain(view)) parts.push(intervalSwitch(view, grid.interval));
  return [...parts, ...notes(result)];
}

function table(view, result, grid, words, format, range) {
  const rate = view.mode === 'rate';
  const percent = (value) => format.figure('percentage', value);
  const count = (value) => format.figure('visitors', value);
  const years = new Set(grid.rows.map((r) => r.cohort.slice(0, 4)));
  const dateOf = cohortLabel(view.locale, grid.interval, years.size > 1);
  // In a cell the unit is said once, above the table: a rate without its % sign, a count in
  // the compact notation when it would not fit.
  const cellText = (cell, room) => {
    if (rate) return cell.rate === null ? '–' : percent(cell.rate).replace(/\s*%/, '');
    const whole = count(cell.retained);
    return whole.length * 6.2 <= room ? whole : format.axis('visitors', cell.retained);
  };
  const first = grid.average.cells[1];
  const label = `Retention table of ${grid.rows.length} ${words.adjective} cohorts, ${words.name.toLowerCase()}s 0 to ${grid.columns - 1}, ${range}`
    + `${first && !first.absent ? `; on average ${percent(first.rate)} came back in ${words.name.toLowerCase()} 1` : ''}.`;
  const chart = cohortChart({
    width: view.width, grid, header: words.name, cellText, label,
    rowLabel: (r) => [dateOf(r.cohort), count(r.visitors)],
    averageLabel: [rate ? 'Average' : 'All cohorts', count(grid.average.visitors)],
  });
  const current = grid.rows.some((r) => r.cells.some((c) => c.current));
  const keys = el('p', { class: 'keys' },
    SHADE_TOPS.map((top, k) => el('span', {}, el('span', { class: `swatch s${k}` }), k ? `≤ ${top}%` : '0%')),
    current ? el('span', {}, el('span', { class: 'swatch current' }), `${words.now}, so far`) : null);
  const unit = rate ? `% of each cohort's visitors back in ${words.name.toLowerCase()} N`
    : `visitors of each cohort back in ${words.name.toLowerCase()} N`;
  // Every cell in words for screen readers: both figures, whichever the table shows.
  const spoken = (cell) => {
    if (cell.absent) return 'not started';
    const both = rate ? `${percent(cell.rate)} (${count(cell.retained)})` : `${count(cell.retained)} (${percent(cell.rate)})`;
    return cell.current ? `${both}, ${words.now} so far` : both;
  };
  const headers = ['Cohort', 'Visitors', ...Array.from({ length: grid.columns }, (_, n) => `${words.name} ${n}`)];
  const rows = [...grid.rows.map((r) => [r.cohort, count(r.visitors), ...r.cells.map(spoken)]),
    ['Average', count(grid.average.visitors), ...grid.average.cells.map(spoken)]];
  return el('figure', {},
    el('p', { class: 'note', text: `${words.name} 0 is the cohort's own; cells: ${unit}.` }),
    chart, keys,
    figuresTable(`Retention of ${words.adjective} cohorts, ${range}: ${rate ? '% back (visitors back)' : 'visitors back (% back)'}`, headers, rows));
}

// Another interval through the host: the same arguments, the interval's default range (the one
// holding today and the seven before it), as a range of days would not suit months.
function intervalSwitch(view, interval) {
  return switchGroup('Interval', INTERVALS, interval, (next) => {
    const { from, to, period, ...args } = view.args;
    askAgain(view, 'retention', { ...args, interval: next }, `Asking for ${intervalWords(next).adjective} cohorts…`);
  }, 'intervals');
}
