// Measures what the official app side would cost a chart app: bundles a view that only
// connects the official `App` of @modelcontextprotocol/ext-apps (with its dependencies, as
// esbuild bundles it for the browser: minified, one IIFE) and prints the bundle's size, raw
// and gzipped. The figure is recorded in README.md ("The chart apps"); it is why src/bridge.js
// exists. Nothing is written to disk.
import { build } from 'esbuild';
import { gzipSync } from 'node:zlib';

const view = `
import { App } from '@modelcontextprotocol/ext-apps';
const app = new App({ name: 'egis-measure', version: '1.0.0' }, {});
app.ontoolresult = (result) => console.log(result.structuredContent);
app.connect();
`;
const result = await build({
  absWorkingDir: new URL('..', import.meta.url).pathname,
  stdin: { contents: view, resolveDir: '.', loader: 'js' },
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  legalComments: 'none',
  write: false,
  metafile: true,
  logLevel: 'warning',
});
const code = result.outputFiles[0].contents;
const gzipped = gzipSync(code, { level: 9 }).length;
console.log(`official App bundle: ${code.length} bytes, ${gzipped} bytes gzipped`);
const packageOf = (path) => {
  const parts = path.replace(/^node_modules\//, '').split('/');
  return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
};
const byPackage = {};
for (const [path, { bytesInOutput }] of Object.entries(Object.values(result.metafile.outputs)[0].inputs)) {
  byPackage[packageOf(path)] = (byPackage[packageOf(path)] ?? 0) + bytesInOutput;
}
for (const [name, bytes] of Object.entries(byPackage).sort((a, b) => b[1] - a[1]).slice(0, 8)) {
  console.log(`  ${name}: ${bytes} bytes (minified, before gzip)`);
}
