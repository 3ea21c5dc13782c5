// Prints the gzipped size of each built chart app and fails above the budget (48 KiB each).
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { APPS } from './apps.mjs';

const LIMIT = 48 * 1024;
for (const name of Object.keys(APPS)) {
  const source = readFileSync(new URL(`../dist/${name}.html`, import.meta.url));
  const gzipped = gzipSync(source, { level: 9 }).length;
  console.log(`dist/${name}.html: ${source.length} bytes, ${gzipped} bytes gzipped (limit ${LIMIT})`);
  if (gzipped > LIMIT) {
    console.error(`dist/${name}.html is ${gzipped - LIMIT} bytes over the ${LIMIT}-byte gzipped budget`);
    process.exitCode = 1;
  }
}
