import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Bridge, PROTOCOL_VERSION } from '../src/bridge.js';

// A host window: records what the app posts, and delivers messages as the browser would (a
// `message` event whose source is the host).
function setUp(events = {}) {
  const posted = [];
  const host = { postMessage: (message, target) => posted.push([message, target]) };
  const listeners = [];
  globalThis.addEventListener = (type, listener) => listeners.push(listener);
  const deliver = (data, source = host) => listeners.forEach((listener) => listener({ data, source }));
  return { bridge: new Bridge(host, { name: 'egis-test', version: '1' }, events), posted, deliver };
}

test('ui/initialize, then initialized, with the host context applied', async () => {
  const contexts = [];
  const { bridge, posted, deliver } = setUp({ hostContext: (context) => contexts.push(context) });
  const connected = bridge.connect();
  const [request] = posted[0];
  assert.deepEqual(request, { jsonrpc: '2.0', id: 1, method: 'ui/initialize', params: {
    appInfo: { name: 'egis-test', version: '1' }, appCapabilities: { availableDisplayModes: ['inline'] },
    protocolVersion: PROTOCOL_VERSION } });
  deliver({ jsonrpc: '2.0', id: 1, result: { hostCapabilities: { serverTools: {} }, hostContext: { theme: 'dark' } } }, {});
  assert.equal(posted.length, 1, 'a message from another window is ignored');
  deliver({ jsonrpc: '2.0', id: 1, result: { protocolVersion: PROTOCOL_VERSION, hostCapabilities: { serverTools: {} }, hostContext: { theme: 'dark' } } });
  await connected;
  assert.deepEqual(posted[1][0], { jsonrpc: '2.0', method: 'ui/notifications/initialized', params: {} });
  assert.equal(bridge.canCallTools(), true);
  assert.deepEqual(contexts, [{ theme: 'dark' }]);
  deliver({ jsonrpc: '2.0', method: 'ui/notifications/host-context-changed', params: { theme: 'light' } });
  assert.deepEqual(contexts[1], { theme: 'light' });
});

test('tool input, result and cancellation reach the app', () => {
  const seen = [];
  const { deliver, bridge } = setUp({
    toolInput: (args) => seen.push(['input', args]), toolResult: (result) => seen.push(['result', result]),
    toolCancelled: (params) => seen.push(['cancelled', params]),
  });
  globalThis.addEventListener('message', bridge.listener);
  deliver({ jsonrpc: '2.0', method: 'ui/notifications/tool-input', params: { arguments: { metrics: ['visits'] } } });
  deliver({ jsonrpc: '2.0', method: 'ui/notifications/tool-result', params: { structuredContent: { results: [] } } });
  deliver({ jsonrpc: '2.0', method: 'ui/notifications/tool-cancelled', params: { reason: 'user' } });
  assert.deepEqual(seen, [['input', { metrics: ['visits'] }], ['result', { structuredContent: { results: [] } }], ['cancelled', { reason: 'user' }]]);
});

test('tools/call through the host, its error, and the host requests the app answers', async () => {
  const { bridge, posted, deliver } = setUp();
  globalThis.addEventListener('message', bridge.listener);
  const answered = bridge.callTool('query', { period: '7d' });
  assert.deepEqual(posted[0][0], { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'query', arguments: { period: '7d' } } });
  deliver({ jsonrpc: '2.0', id: 1, result: { structuredContent: { site: 'x' } } });
  assert.deepEqual(await answered, { structuredContent: { site: 'x' } });
  const failed = bridge.callTool('query', {});
  deliver({ jsonrpc: '2.0', id: 2, error: { code: -32603, message: 'denied' } });
  await assert.rejects(failed, /denied/);
  deliver({ jsonrpc: '2.0', id: 'a', method: 'ui/resource-teardown', params: { reason: 'x' } });
  deliver({ jsonrpc: '2.0', id: 'b', method: 'ui/unknown', params: {} });
  assert.deepEqual(posted.slice(-2).map(([message]) => message), [
    { jsonrpc: '2.0', id: 'a', result: {} },
    { jsonrpc: '2.0', id: 'b', error: { code: -32601, message: 'Method not found: ui/unknown' } },
  ]);
});
