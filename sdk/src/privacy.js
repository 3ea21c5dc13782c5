/**
 * Whether this visit may be tracked at all: not when the visitor opted out (egis_ignore,
 * Do Not Track, Global Privacy Control) or the page is not on one of the configured hostnames.
 * @param {ReturnType<import('./options.js').parseOptions>} options
 * @param {{doNotTrack?: string, globalPrivacyControl?: boolean}} navigator
 * @param {string} hostname the page's
 * @param {boolean} ignored whether localStorage.egis_ignore is "true"
 */
export function mayTrack({ on, domains }, navigator, hostname, ignored) {
  if (ignored) return false;
  if (on('respectDnt') && (navigator.doNotTrack == 1 || navigator.globalPrivacyControl)) return false;
  return !domains.length || domains.includes(hostname.toLowerCase());
}
