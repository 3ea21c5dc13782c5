import { errorProperties } from '../properties.js';

// A broken render loop can throw on every frame: it must not spend the site's event quota.
const MAX_ERRORS_PER_PAGE = 20;

/** error events for uncaught errors (context: where) and unhandled promise rejections. */
export function captureErrors({ record }) {
  let count = 0;
  const report = (error, context) => count++ < MAX_ERRORS_PER_PAGE && record('error', 0, errorProperties(error, context));
  addEventListener('error', (event) => report(event.error || event.message, `${event.filename}:${event.lineno}:${event.colno}`));
  addEventListener('unhandledrejection', (event) => report(event.reason, 'unhandledrejection'));
}
