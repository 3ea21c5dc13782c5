// The drawings, in SVG of our own rather than a chart library: uPlot (1.6.32: 22,009 bytes
// gzipped, canvas) would draw only the line, and a canvas holds no text for a screen reader (see
// README.md, "Agents (MCP)"). SVG sized to the width it is given (redrawn when it changes, so text
// stays crisp and nothing scrolls sideways down to 360 px): a line over time with the comparison
// period dashed, horizontal bars, a funnel's steps with their drop-off, a retention table of
// cohorts, and paths as columns of steps with the links between them. Each SVG is one image with
// a summary for screen readers; the figures themselves are in the table beside it.
import { svg } from './dom.js';
import { bands } from './shape.js';

const FONT = 12;
const CHAR = 6.6; // the average width of a character at 12 px, to shorten labels that overflow
const SMALL = 6.1; // the same at 11 px

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

// A retention table: a row per cohort (its label and visitors), a cell per interval after it
// shaded by its rate (classes s0 to s7, whose colours and text colours style.css sets per theme),
// the average row last. Intervals that do not fit the width side by side wrap into bands of
// equal width, each with its cohort column; absent cells are not drawn; a cell of the interval
// holding now is outlined.
export function cohortChart({ width, grid, header, rowLabel, averageLabel, cellText, label }) {
  const head = 22;
  const row = 34;
  const labelWidth = Math.min(120, Math.max(56, Math.ceil(
    Math.max(...grid.rows.map((r) => rowLabel(r)[0].length), averageLabel[0].length) * CHAR) + 10));
  const available = width - labelWidth;
  const fitting = Math.max(1, Math.floor(available / 34));
  const bandCount = Math.ceil(grid.columns / fitting) || 1;
  const per = Math.ceil(grid.columns / bandCount);
  const cell = Math.min(72, Math.floor(available / per));
  const bandHeight = head + (grid.rows.length + 1) * row + 6;
  const height = bandCount * bandHeight + (bandCount - 1) * 14;
  const chart = svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': label, class: 'chart cohorts' });
  const drawRow = (y, [first, second], cells) => {
    chart.append(svg('text', { x: 0, y: y + 14, class: 'label', text: fit(first, labelWidth - 6) }),
      svg('text', { x: 0, y: y + 28, class: 'tick', text: second }));
    cells.forEach((c, j) => {
      if (c.absent) return;
      const x = labelWidth + j * cell;
      const shade = c.level === null ? 'none' : `s${c.level}`;
      chart.append(
        svg('rect', { x: x + 1, y: y + 1, width: cell - 2, height: row - 2, rx: 3, class: `cell ${shade}${c.current ? ' current' : ''}` }),
        svg('text', { x: x + cell / 2, y: y + row / 2 + 4, 'text-anchor': 'middle', class: `cell-text ${shade}${cell < 40 ? ' tight' : ''}`, text: cellText(c, cell - 4) }));
    });
  };
  for (let b = 0; b < bandCount; b += 1) {
    const y0 = b * (bandHeight + 14);
    const from = b * per;
    const to = Math.min(grid.columns, from + per);
    chart.append(svg('text', { x: 0, y: y0 + 14, class: 'tick', text: header }));
    for (let n = from; n < to; n += 1) {
      chart.append(svg('text', { x: labelWidth + (n - from) * cell + cell / 2, y: y0 + 14, 'text-anchor': 'middle', class: 'tick', text: String(n) }));
    }
    grid.rows.forEach((r, i) => drawRow(y0 + head + i * row, rowLabel(r), r.cells.slice(from, to)));
    const averageY = y0 + head + grid.rows.length * row + 6;
    chart.append(svg('line', { x1: 0, x2: width, y1: averageY - 3, y2: averageY - 3, class: 'grid' }));
    drawRow(averageY, averageLabel, grid.average.cells.slice(from, to));
  }
  return chart;
}

// Paths: the anchor and each step as a column of bars (a value's label and visits · share, a
// bar as long as its share of the anchor's visits), in time order (backward, the steps run
// leftwards from the anchor on the right), and the links between consecutive columns as bands
// as thick as their visits (the busiest link 12 px). Columns that do not fit side by side wrap
// into bands of columns (bands() in shape.js: each band repeats the column the one before ended
// with).
export function pathsChart({ width, paths, header, valueText, valueLabel, label }) {
  const gap = 40;
  const row = 36;
  const head = 22;
  const { columns, order, links } = paths;
  const perBand = Math.max(2, Math.floor((width + gap) / (118 + gap)));
  const bandList = bands(order.length, perBand);
  const shown = Math.min(perBand, order.length);
  const col = (width - (shown - 1) * gap) / shown;
  const heights = bandList.map((band) => head + Math.max(...band.map((p) => columns[order[p]].values.length)) * row);
  const height = heights.reduce((total, h) => total + h, 0) + (bandList.length - 1) * 18;
  const chart = svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': label, class: 'chart paths' });
  const position = new Map(order.map((c, p) => [c, p]));
  const widest = Math.max(1, ...links.map((link) => link.visits));
  let y0 = 0;
  bandList.forEach((band, b) => {
    const x = (p) => (p - band[0]) * (col + gap);
    const middle = (r) => y0 + head + r * row + 22;
    for (const link of links) {
      const [p, q] = [position.get(link.step - 1), position.get(link.step)];
      if (!band.includes(p) || !band.includes(q)) continue;
      const [left, leftRow, right, rightRow] = p < q ? [p, link.fromRow, q, link.toRow] : [q, link.toRow, p, link.fromRow];
      const [x1, x2] = [x(left) + col + 2, x(right) - 2];
      const [y1, y2] = [middle(leftRow), middle(rightRow)];
      const bend = (x1 + x2) / 2;
      const to = columns[link.step].values[link.toRow];
      chart.append(svg('path', {
        d: `M${x1.toFixed(1)},${y1} C${bend.toFixed(1)},${y1} ${bend.toFixed(1)},${y2} ${x2.toFixed(1)},${y2}`,
        'stroke-width': (1 + (11 * link.visits) / widest).toFixed(1),
        class: `link${to.kind === 'end' ? ' to-end' : ''}`,
      }));
    }
    for (const p of band) {
      const column = columns[order[p]];
      chart.append(svg('text', { x: x(p), y: y0 + 13, class: 'tick', text: header(column) }));
      column.values.forEach((value, r) => {
        const y = y0 + head + r * row;
        const figures = valueText(value);
        const room = col - figures.length * SMALL - 8;
        const kind = column.step === 0 ? `anchor ${value.kind}` : value.kind;
        const length = Math.max(value.visits ? 2 : 0, (Math.min(100, value.share ?? 0) / 100) * col);
        chart.append(svg('g', { class: `node ${kind}` },
          svg('title', { text: `${valueLabel(value)}: ${figures}` }),
          svg('text', { x: x(p), y: y + 12, class: 'label', text: fit(valueLabel(value), column.step === 0 ? room * 0.9 : room) }), // the anchor's is bold
          svg('text', { x: x(p) + col, y: y + 12, 'text-anchor': 'end', class: 'value', text: figures }),
          svg('rect', { x: x(p), y: y + 18, width: col.toFixed(1), height: 8, rx: 2, class: 'track' }),
          svg('rect', { x: x(p), y: y + 18, width: length.toFixed(1), height: 8, rx: 2, class: 'bar' })));
      });
    }
    y0 += heights[b] + 18;
  });
  return chart;
}
