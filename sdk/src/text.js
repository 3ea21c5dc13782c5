/**
 * `value` as a string of at most `max` characters ("" for null and undefined). It never ends in
 * half of a surrogate pair: the service refuses a whole batch (400) for one lone surrogate.
 */
export const cut = (value, max) => String(value ?? '').slice(0, max).replace(/[\ud800-\udbff]$/, '');

/** Size of `text` in UTF-8 bytes, as it goes on the wire. */
export const byteLength = (text) => new Blob([text]).size;
