// The app side of the MCP Apps host bridge (extension io.modelcontextprotocol/ui, 2026-01-26):
// JSON-RPC 2.0 over postMessage with the host (through its sandbox proxy, when the host is a web
// page). Written here rather than taken from @modelcontextprotocol/ext-apps: its `App` bundles to
// 146,959 bytes gzipped (zod and the MCP client it validates with: `npm run
// measure-official-app`), three times this app's 48 KiB budget, and zod probes `eval`, which the
// spec's default CSP refuses. This is the handful of messages a chart needs: ui/initialize and
// ui/notifications/initialized, the host's tool-input, tool-result, tool-cancelled and
// host-context-changed notifications, size-changed, tools/call, and answers to the host's
// requests (ui/resource-teardown, ping). test/bridge.test.mjs drives it; tests/agent/apps/ runs
// it against the official AppBridge host in Chromium.

export const PROTOCOL_VERSION = '2026-01-26';
const METHOD_NOT_FOUND = -32601;

export class Bridge {
  // host: the window to talk to (window.parent); events: {toolInput, toolResult, toolCancelled,
  // hostContext} callbacks.
  constructor(host, appInfo, events = {}) {
    this.host = host;
    this.appInfo = appInfo;
    this.events = events;
    this.nextId = 1;
    this.pending = new Map();
    this.hostContext = {};
    this.hostCapabilities = {};
    this.lastSize = '';
    this.listener = (event) => {
      if (event.source === this.host) this.receive(event.data);
    };
  }

  async connect(view) {
    globalThis.addEventListener('message', this.listener);
    const result = await this.request('ui/initialize', {
      appInfo: this.appInfo,
      appCapabilities: { availableDisplayModes: ['inline'] },
      protocolVersion: PROTOCOL_VERSION,
    });
    this.hostCapabilities = result.hostCapabilities ?? {};
    this.updateContext(result.hostContext ?? {});
    this.notify('ui/notifications/initialized', {});
    if (view) this.watchSize(view);
    return result;
  }

  send(message) {
    this.host.postMessage({ jsonrpc: '2.0', ...message }, '*');
  }

  notify(method, params) {
    this.send({ method, params });
  }

  request(method, params) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.send({ id, method, params });
    });
  }

  // A tool of the app's own server, through the host (hostCapabilities.serverTools).
  callTool(name, args) {
    return this.request('tools/call', { name, arguments: args });
  }

  canCallTools() {
    return Boolean(this.hostCapabilities.serverTools);
  }

  receive(message) {
    if (!message || message.jsonrpc !== '2.0') return;
    if ('method' in message) {
      if ('id' in message) this.answer(message);
      else this.onNotification(message.method, message.params ?? {});
      return;
    }
    const waiting = this.pending.get(message.id);
    if (!waiting) return;
    this.pending.delete(message.id);
    if (message.error) waiting.reject(new Error(message.error.message ?? 'request failed'));
    else waiting.resolve(message.result ?? {});
  }

  answer({ id, method }) {
    if (method === 'ui/resource-teardown' || method === 'ping') {
      this.send({ id, result: {} });
    } else {
      this.send({ id, error: { code: METHOD_NOT_FOUND, message: `Method not found: ${method}` } });
    }
  }

  onNotification(method, params) {
    const { events } = this;
    if (method === 'ui/notifications/tool-input') events.toolInput?.(params.arguments ?? {});
    else if (method === 'ui/notifications/tool-result') events.toolResult?.(params);
    else if (method === 'ui/notifications/tool-cancelled') events.toolCancelled?.(params);
    else if (method === 'ui/notifications/host-context-changed') this.updateContext(params);
  }

  updateContext(changes) {
    this.hostContext = { ...this.hostContext, ...changes };
    this.events.hostContext?.(this.hostContext, changes);
  }

  // size-changed whenever the rendered document's size changes: the host sizes its frame to it.
  watchSize(view) {
    let queued = false;
    const measure = () => {
      queued = false;
      const root = view.document.documentElement;
      const height = Math.ceil(root.getBoundingClientRect().height);
      const width = Math.ceil(view.innerWidth);
      const size = `${width}x${height}`;
      if (size === this.lastSize) return;
      this.lastSize = size;
      this.notify('ui/notifications/size-changed', { width, height });
    };
    const schedule = () => {
      if (queued) return;
      queued = true;
      view.requestAnimationFrame(measure);
    };
    schedule();
    const observer = new view.ResizeObserver(schedule);
    observer.observe(view.document.documentElement);
    observer.observe(view.document.body);
  }
}
