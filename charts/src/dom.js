// Building the page: HTML and SVG elements, and the accessible table every chart carries.
const SVG = 'http://www.w3.org/2000/svg';

export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  return fill(node, attributes, children);
}

export function svg(tag, attributes = {}, ...children) {
  return fill(document.createElementNS(SVG, tag), attributes, children);
}

function fill(node, attributes, children) {
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'text') node.textContent = value;
    else if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) {
      node.append(typeof child === 'string' ? document.createTextNode(child) : child);
    }
  }
  return node;
}

// The figures of a chart as a table for screen readers (visually hidden: the chart shows them;
// hidden in a box of its own, as a table is never narrower than its widest row).
export function figuresTable(caption, headers, rows) {
  return el('div', { class: 'sr-only' }, el('table', {},
    el('caption', { text: caption }),
    el('thead', {}, el('tr', {}, headers.map((text) => el('th', { scope: 'col', text })))),
    el('tbody', {}, rows.map(([head, ...cells]) => el('tr', {},
      el('th', { scope: 'row', text: head }), cells.map((text) => el('td', { text })))))));
}

// A row of toggle buttons, the pressed one marked (the metric shown, the period or interval
// asked for): options are [value, text] pairs; pick(value) runs on a click.
export function switchGroup(label, options, pressed, pick, className = '') {
  return el('div', { class: `switch ${className}`.trim(), role: 'group', 'aria-label': label },
    options.map(([value, text]) => el('button', {
      type: 'button', 'aria-pressed': String(value === pressed), text, onclick: () => pick(value),
    })));
}
