// A test host for the chart apps, built on the official AppBridge of @modelcontextprotocol/ext-apps
// (bundled by build-host.mjs): it loads the spec's sandbox proxy from a second origin in an
// iframe, hands it the app's HTML (sandbox-resource-ready), and drives the app as a host does:
// ui/initialize answered with a host context (theme, locale, container width), then tool-input
// and tool-result, host-context-changed on demand, tools/call answered by the page's
// `egisCallTool` (tests/agent/apps/ exposes it: it calls the live egis).
import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';

function sandboxReady(frame) {
  return new Promise((resolve) => {
    const listener = ({ source, data }) => {
      if (source === frame.contentWindow && data?.method === 'ui/notifications/sandbox-proxy-ready') {
        window.removeEventListener('message', listener);
        resolve();
      }
    };
    window.addEventListener('message', listener);
  });
}

window.egisHost = {
  sizes: [],
  async show({ sandboxUrl, html, csp, args, result, hostContext, width }) {
    const box = document.getElementById('host');
    box.style.width = `${width}px`;
    const frame = document.createElement('iframe');
    frame.setAttribute('sandbox', 'allow-scripts allow-same-origin');
    frame.title = 'chart';
    box.replaceChildren(frame);
    const ready = sandboxReady(frame);
    frame.src = sandboxUrl;
    await ready;
    const bridge = new AppBridge(null, { name: 'egis-test-host', version: '1.0.0' },
      { serverTools: {}, openLinks: {} },
      { hostContext: { ...hostContext, containerDimensions: { width, maxHeight: 2000 } } });
    bridge.oncalltool = async (params) => window.egisCallTool(params.name, params.arguments ?? {});
    bridge.onsizechange = ({ height }) => {
      this.sizes.push(height);
      if (height) frame.style.height = `${height}px`;
    };
    const initialized = new Promise((resolve) => { bridge.oninitialized = resolve; });
    await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
    await bridge.sendSandboxResourceReady({ html, csp });
    await initialized;
    this.bridge = bridge;
    await bridge.sendToolInput({ arguments: args });
    await bridge.sendToolResult(result);
    return bridge.getAppVersion();
  },
  async setTheme(theme) {
    await this.bridge.sendHostContextChange({ theme });
  },
  async teardown() {
    return this.bridge.teardownResource({ reason: 'test' });
  },
};
