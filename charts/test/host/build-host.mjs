// Bundles the test host (host.js, with the official AppBridge) into one page: `node
// test/host/build-host.mjs OUT.html`. The tests in tests/agent/apps/ serve it; it is no part of
// the apps and is not committed built.
import { build } from 'esbuild';
import { writeFileSync } from 'node:fs';

const result = await build({
  absWorkingDir: new URL('../..', import.meta.url).pathname,
  entryPoints: ['test/host/host.js'],
  bundle: true,
  format: 'iife',
  target: 'es2022',
  write: false,
  logLevel: 'warning',
});
const script = result.outputFiles[0].text.replace(/<\/script/gi, '<\\/script');
writeFileSync(process.argv[2], `<!doctype html><html><head><meta charset="utf-8"><title>test host</title><link rel="icon" href="data:,">
<style>body { margin: 0; font: 14px sans-serif; } #host iframe { display: block; width: 100%; border: 0; }</style>
</head><body><div id="host"></div><script>${script}</script></body></html>`);
