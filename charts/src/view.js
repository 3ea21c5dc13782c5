// What the apps share: the bridge to the host, the host's theme, style variables and locale,
// the width to draw at, the states before and besides a chart (waiting, failed, cancelled), the
// line naming the site and period, the result's warnings, and asking the tool again.
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

// "charts.example · 2026-11-04 to 2026-11-17 · UTC" under each app's headline.
export function rangeLine(result) {
  const zone = result.timezone ? ` · ${result.timezone}` : '';
  return el('p', { class: 'range', text: `${result.site ?? ''} · ${result.from} to ${result.to}${zone}` });
}

// The result's warnings, and a note when sampled data was read.
export function notes(result) {
  const parts = (result.warnings ?? []).map((warning) => el('p', { class: 'warning', text: warning }));
  if (result.estimated) parts.push(el('p', { class: 'note', text: 'Estimated: part of the data was sampled.' }));
  return parts;
}

// Whether the host lets the app call the tool again with the arguments it was shown.
export function canAskAgain(view) {
  return view.bridge.canCallTools() && Object.keys(view.args ?? {}).length > 0;
}

// The same tool called again through the host with other arguments (another period, another
// interval); its answer replaces the result drawn. `waiting` is said meanwhile.
export async function askAgain(view, tool, args, waiting) {
  view.say(waiting);
  try {
    const answer = await view.bridge.callTool(tool, args);
    if (answer.isError || !answer.structuredContent) throw new Error(answer.content?.[0]?.text ?? 'no result');
    view.args = args;
    view.result = answer.structuredContent;
    view.redraw();
  } catch (error) {
    view.say(`The call to ${tool} failed: ${error.message}`);
  }
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
