// The three drawings, in SVG of our own rather than a chart library: uPlot (1.6.32: 22,009 bytes
// gzipped, canvas) would draw only the line, and a canvas holds no text for a screen reader (see
// README.md, "Agents (MCP)"). SVG sized to the width it is given (redrawn when it changes, so text
// stays crisp and nothing scrolls sideways down to 360 px): a line over time with the comparison
// period dashed, horizontal bars, and a funnel's steps with their drop-off. Each SVG is one image
// with a summary for screen readers; the figures themselves are in the table beside it.
import { svg } from './dom.js';

const FONT = 12;
const CHAR = 6.6; // the average width of a character at 12 px, to shorten labels that overflow

function fit(text, width) {
  const room = Math.max(3, Math.floor(width / CHAR));
  return text.length <= room ? text : `${text.slice(0, room - 1)}…`;
}

// A round top for an axis of four steps: each step 1, 2 or 5 times a power of ten.
function niceMax(value, steps = 4) {
  if (!(value > 0)) return steps;
  const rough = value / steps;
  const power = 10 ** Math.floor(Math.log10(rough));
  return [1, 2, 5, 10].find((s) => s * power >= rough) * power * steps;
}

function points(values, x, y) {
  // Runs of defined values: a gap (null) splits the line.
  const runs = [];
  let run = [];
  values.forEach((value, i) => {
    if (value === null || value === undefined) {
      if (run.length) runs.push(run);
      run = [];
    } else run.push(`${x(i).toFixed(1)},${y(value).toFixed(1)}`);
  });
  if (run.length) runs.push(run);
  return runs;
}

export function lineChart({ width, series, format, label }) {
  const height = 220;
  const pad = { top: 12, right: 12, bottom: 28, left: 52 };
  const inner = { w: width - pad.left - pad.right, h: height - pad.top - pad.bottom };
  const values = series.flatMap((p) => [p.value, p.before]).filter((v) => typeof v === 'number');
  const top = niceMax(Math.max(0, ...values));
  const x = (i) => pad.left + (series.length > 1 ? (i / (series.length - 1)) * inner.w : inner.w / 2);
  const y = (v) => pad.top + inner.h - (v / top) * inner.h;
  const chart = svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': label, class: 'chart' });
  for (let i = 0; i <= 4; i += 1) {
    const v = (top / 4) * i;
    chart.append(
      svg('line', { x1: pad.left, x2: width - pad.right, y1: y(v), y2: y(v), class: 'grid' }),
      svg('text', { x: pad.left - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'tick', text: format(v) }));
  }
  const ticks = Math.min(series.length, Math.max(2, Math.floor(inner.w / 80)));
  for (let t = 0; t < ticks; t += 1) {
    const i = ticks > 1 ? Math.round((t / (ticks - 1)) * (series.length - 1)) : 0;
    const anchor = t === 0 ? 'start' : t === ticks - 1 ? 'end' : 'middle';
    chart.append(svg('text', { x: x(i), y: height - 8, 'text-anchor': anchor, class: 'tick', text: series[i].label.slice(5) || series[i].label }));
  }
  if (series.some((p) => p.before !== undefined)) {
    for (const run of points(series.map((p) => p.before), x, y)) {
      chart.append(svg('polyline', { points: run.join(' '), class: 'line before' }));
    }
  }
  for (const run of points(series.map((p) => p.value), x, y)) {
    chart.append(svg('polyline', { points: run.join(' '), class: 'line now' }));
    if (run.length === 1) {
      const [cx, cy] = run[0].split(',');
      chart.append(svg('circle', { cx, cy, r: 3, class: 'dot' }));
    }
  }
  return chart;
}

export function barChart({ width, bars, format, label }) {
  const row = 36;
  const height = bars.length * row + 4;
  const top = Math.max(0, ...bars.map((b) => b.value ?? 0)) || 1; // the longest bar fills the row
  const valueRoom = 84;
  const chart = svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': label, class: 'chart' });
  bars.forEach((bar, i) => {
    const y = i * row;
    const length = Math.max(bar.value ? 2 : 0, ((bar.value ?? 0) / top) * (width - valueRoom));
    chart.append(
      svg('text', { x: 0, y: y + FONT, class: 'label', text: fit(bar.label, width - valueRoom) }),
      svg('rect', { x: 0, y: y + 17, width: length.toFixed(1), height: 12, rx: 2, class: bar.rest ? 'bar rest' : 'bar' }),
      svg('text', { x: width, y: y + 28, 'text-anchor': 'end', class: 'value', text: format(bar.value) }));
  });
  return chart;
}

export function funnelChart({ width, steps, count, percent, dropoff, label }) {
  const row = 58;
  const height = steps.length * row;
  const first = steps[0]?.count || 1;
  const chart = svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': label, class: 'chart' });
  steps.forEach((step, i) => {
    const y = i * row;
    const length = Math.max(step.count ? 2 : 0, (step.count / first) * width);
    const head = `${i + 1}. ${step.label}`;
    chart.append(
      svg('text', { x: 0, y: y + FONT, class: 'label', text: fit(head, width - 150) }),
      svg('text', { x: width, y: y + FONT, 'text-anchor': 'end', class: 'value', text: `${count(step.count)} · ${percent(step.share)}` }),
      svg('rect', { x: 0, y: y + 18, width, height: 16, rx: 3, class: 'track' }),
      svg('rect', { x: 0, y: y + 18, width: length.toFixed(1), height: 16, rx: 3, class: 'bar' }));
    if (i > 0) {
      chart.append(svg('text', { x: 0, y: y + 50, class: 'drop', text: dropoff(step.dropoff, step.stepShare, i) }));
    }
  });
  return chart;
}
