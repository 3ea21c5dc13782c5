// What both apps share: the bridge to the host, the host's theme, style variables and locale,
// the width to draw at, and the states before and besides a chart (waiting, failed, cancelled).
import { Bridge } from './bridge.js';
import { el } from './dom.js';

export function startView(name, render) {
  const root = document.getElementById('app');
  const state = { result: null, args: {}, locale: undefined, width: 0, bridge: null };
  const draw = () => {
    if (!state.result) return;
    root.replaceChildren(...render(state));
  };
  const say = (text) => root.replaceChildren(el('p', { class: 'note', role: 'status', text }));
  const bridge = new Bridge(window.parent, { name: `egis-${name}-chart`, version: '1.0.0' }, {
    toolInput(args) { state.args = args; },
    toolResult(result) {
      if (result.isError || !result.structuredContent) {
        state.result = null;
        say(result.content?.find((c) => c.type === 'text')?.text ?? 'The tool answered no result.');
        return;
      }
      state.result = result.structuredContent;
      draw();
    },
    toolCancelled() { if (!state.result) say('The query was cancelled.'); },
    hostContext(context, changes) {
      applyTheme(context);
      if ('locale' in changes) state.locale = context.locale;
      draw();
    },
  });
  state.bridge = bridge;
  state.redraw = draw;
  state.say = say;
  // The width to draw at: main's content box (its padding aside).
  const contentWidth = () => {
    const style = getComputedStyle(root);
    return Math.floor(root.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight));
  };
  new ResizeObserver(() => {
    if (contentWidth() !== state.width) {
      state.width = contentWidth();
      draw();
    }
  }).observe(root);
  state.width = contentWidth();
  say('Waiting for the result…');
  bridge.connect(window).catch((error) => say(`Could not reach the host: ${error.message}`));
  return state;
}

function applyTheme(context) {
  const html = document.documentElement;
  if (context.theme === 'dark' || context.theme === 'light') {
    html.dataset.theme = context.theme;
    html.style.colorScheme = context.theme;
  }
  for (const [name, value] of Object.entries(context.styles?.variables ?? {})) {
    if (typeof value === 'string' && name.startsWith('--')) html.style.setProperty(name, value);
  }
}
