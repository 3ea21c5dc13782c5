// The paths app: draws a `paths` result (its structuredContent): the anchor and each step as a
// column of bars (each value's visits and share of the anchor's visits), the links between
// consecutive steps, in time order whichever the direction, and the top paths as a list.
import { numberFormat, pathValueLabel } from './format.js';
import { pathColumns, topPaths } from './shape.js';
import { pathsChart } from './charts.js';
import { el, figuresTable } from './dom.js';
import { notes, rangeLine, startView } from './view.js';

startView('paths', (view) => {
  const result = view.result;
  const paths = pathColumns(result);
  const format = numberFormat(view.locale);
  const count = (value) => format.figure('visits', value);
  const percent = (value) => format.figure('percentage', value);
  const range = `${result.from} to ${result.to}`;
  const anchor = pathValueLabel(result.anchor);
  const fromEntry = result.anchor === '(entry)';
  const where = fromEntry ? 'from the entry' : `${paths.backward ? 'before' : 'after'} ${anchor}`;
  const head = el('header', {},
    el('p', { class: 'headline' }, el('strong', { text: 'Paths' }), ` ${where}`,
      paths.empty ? '' : ` · ${count(paths.anchor.visits)} visits`),
    rangeLine(result));
  if (paths.empty) {
    const none = fromEntry ? `No visits from ${range}.` : `No visits reached ${anchor} from ${range}.`;
    return [head, el('p', { class: 'note', role: 'status', text: none }), ...notes(result)];
  }
  const steps = paths.columns.length - 1;
  const header = (column) => (column.step === 0 ? (fromEntry ? 'Entry' : 'Anchor') : `Step ${column.step}`);
  const next = paths.columns[1]?.values[0];
  const label = `Paths chart: ${count(paths.anchor.visits)} visits ${where}, ${steps} step${steps === 1 ? '' : 's'} ${paths.backward ? 'before' : 'after'} it, ${range}`
    + `${next ? `; step 1 most often ${pathValueLabel(next.value)} (${count(next.visits)}, ${percent(next.share)})` : ''}.`;
  const chart = pathsChart({
    width: view.width, paths, header, label,
    valueText: (value) => `${count(value.visits)} · ${percent(value.share)}`,
    valueLabel: (value) => pathValueLabel(value.value),
  });
  const end = paths.backward ? '(entry)' : '(exit)';
  const kinds = new Set(paths.columns.flatMap((column) => column.values.map((value) => value.kind)));
  const keys = el('p', { class: 'keys' },
    [['page', 'page'], ['goal', 'goal'], ['other', '(other): the rest of the step'],
      ['end', `${end}: the visit ${paths.backward ? 'began' : 'ended'}`]]
      .filter(([kind]) => kinds.has(kind))
      .map(([kind, text]) => el('span', {}, el('span', { class: `swatch ${kind}` }), text)));
  const values = paths.columns.flatMap((column) => column.values.map((value) => [header(column),
    pathValueLabel(value.value), count(value.visits), percent(value.share)]));
  const links = paths.links.map((link) => [`Step ${link.step}`, pathValueLabel(link.from),
    pathValueLabel(link.to), count(link.visits)]);
  const top = topPaths(result);
  return [head, el('figure', {}, chart, keys,
    figuresTable(`Visits at each step ${where}, ${range} (share of the ${count(paths.anchor.visits)} visits)`,
      ['Step', 'Page or goal', 'Visits', 'Share'], values),
    figuresTable(`Visits from each step's value to the next step's, ${range}`, ['Step', 'From', 'To', 'Visits'], links)),
  top.length ? el('h2', { text: 'Top paths' }) : null,
  top.length ? el('ol', { class: 'top-paths' }, top.map((path) => el('li', {},
    path.nodes.map(pathValueLabel).join(' → '), el('span', { class: 'count', text: ` · ${count(path.visits)} visits` })))) : null,
  ...notes(result)];
});
