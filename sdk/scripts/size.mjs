// Prints the gzipped size of the built tracker and fails above the budget.
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const LIMIT = 6400;
const source = readFileSync(new URL('../dist/tracker.js', import.meta.url));
const gzipped = gzipSync(source, { level: 9 }).length;
console.log(`dist/tracker.js: ${source.length} bytes, ${gzipped} bytes gzipped (limit ${LIMIT})`);
if (gzipped > LIMIT) {
  console.error(`dist/tracker.js is ${gzipped - LIMIT} bytes over the ${LIMIT}-byte gzipped budget`);
  process.exitCode = 1;
}
