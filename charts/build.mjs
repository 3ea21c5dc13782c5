// Builds the chart apps (scripts/apps.mjs) into dist/<app>.html: one self-contained HTML
// document each (MCP Apps serve the HTML itself, and the spec's default CSP allows no other
// file), the app's script (src/<app>.js bundled: one minified IIFE) and the style sheet inline in
// src/page.html. The output depends on the sources and the locked esbuild only: no timestamps,
// no paths, no comments. `.ci/run` rebuilds and checks that the committed dist/ is this build.
import { build, transform } from 'esbuild';
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { APPS } from './scripts/apps.mjs';

const here = new URL('.', import.meta.url).pathname;

const page = readFileSync(`${here}src/page.html`, 'utf8');
const style = (await transform(readFileSync(`${here}src/style.css`, 'utf8'), {
  loader: 'css', minify: true, target: 'chrome100', legalComments: 'none',
})).code.trim();

mkdirSync(`${here}dist`, { recursive: true });
for (const [name, title] of Object.entries(APPS)) {
  const result = await build({
    absWorkingDir: here,
    entryPoints: [`src/${name}.js`],
    bundle: true,
    format: 'iife',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    charset: 'utf8',
    write: false,
    logLevel: 'warning',
  });
  const script = result.outputFiles[0].text.trim();
  if (/<\/script/i.test(script) || /<\/style/i.test(style)) {
    throw new Error(`${name}: the bundle holds a closing tag that would end its inline element`);
  }
  // Replacement functions: a `$` in the code is not a replacement pattern.
  const html = page.replace('%TITLE%', () => title).replace('%STYLE%', () => style)
    .replace('%SCRIPT%', () => script);
  writeFileSync(`${here}dist/${name}.html`, html);
}
