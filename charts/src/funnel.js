// The funnel app: draws a `funnel` result (its structuredContent): each step's count, its share
// of step 1, and what dropped off since the step before.
import { numberFormat } from './format.js';
import { funnelSteps } from './shape.js';
import { funnelChart } from './charts.js';
import { el, figuresTable } from './dom.js';
import { rangeLine, startView } from './view.js';

startView('funnel', (view) => {
  const result = view.result;
  const format = numberFormat(view.locale);
  const steps = funnelSteps(result);
  const unit = result.unit === 'visitor' ? 'visitors' : 'visits';
  const range = `${result.from} to ${result.to}`;
  const head = el('header', {},
    el('p', { class: 'headline' }, el('strong', { text: 'Funnel' }), ` of ${unit}`),
    rangeLine(result));
  if (!steps.length || !steps[0].count) {
    return [head, el('p', { class: 'note', role: 'status', text: `No ${unit} reached the first step from ${range}.` })];
  }
  const count = (value) => format.figure('visits', value);
  const percent = (value) => format.figure('percentage', value);
  const last = steps[steps.length - 1];
  const label = `Funnel chart of ${steps.length} steps, ${range}: ${count(steps[0].count)} ${unit} at step 1, ${count(last.count)} (${percent(last.share)}) reached the last.`;
  const rows = steps.map((step, i) => [`${i + 1}. ${step.label}`, count(step.count),
    percent(step.share), i ? percent(step.stepShare) : '', i ? count(step.dropoff) : '']);
  return [head, el('figure', {},
    funnelChart({ width: view.width, steps, count, percent, dropoff: format.dropoff, label }),
    figuresTable(`Funnel of ${unit}, ${range}`, ['Step', unit[0].toUpperCase() + unit.slice(1), 'Of step 1', 'Of the step before', 'Dropped off'], rows))];
});
