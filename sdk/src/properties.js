import { byteLength, cut } from './text.js';
import { warn } from './warn.js';

/**
 * A copy of caller-given properties, or {} when they are not a JSON object of at most 16 KiB:
 * the service would refuse the whole batch for one such event.
 * @param {unknown} value
 */
export function checkedProperties(value) {
  try {
    const text = JSON.stringify(value ?? {});
    if (text[0] == '{' && byteLength(text) <= 16384) return JSON.parse(text);
  } catch {}
  warn('bad properties (a JSON object, 16 KiB at most)');
  return {};
}

/**
 * The properties of an error event: message (at most 1000 characters), stack (4000), context.
 * @param {unknown} error an Error, a message, or anything thrown
 * @param {unknown} [context]
 */
export const errorProperties = (error, context) => ({
  message: cut(error?.message || error || 'Error', 1000),
  stack: cut(error?.stack, 4000),
  context,
});

/** utm_source, utm_medium and utm_campaign from a URL's query string, those present. */
export function utmProperties(url) {
  const params = new URL(url).searchParams;
  const utm = {};
  for (const name of ['utm_source', 'utm_medium', 'utm_campaign']) if (params.get(name)) utm[name] = cut(params.get(name), 256);
  return utm;
}
