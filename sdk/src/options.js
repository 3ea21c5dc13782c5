/**
 * The tracker's settings, read from its script tag's data- attributes.
 * @param {Record<string, string | undefined>} data the tag's dataset (or a plain object)
 * @param {string} [scriptSrc] the tag's absolute src: its origin is the default API
 */
export function parseOptions(data, scriptSrc) {
  const flushInterval = +data.flushInterval;
  return {
    key: data.key,
    api: (data.api || (scriptSrc ? new URL(scriptSrc).origin : '')).replace(/\/+$/, ''),
    domains: (data.domains || '').split(',').map((domain) => domain.trim().toLowerCase()).filter(Boolean),
    flushInterval: flushInterval > 0 ? flushInterval : 5000,
    /**
     * Whether a switch (pageviews, clicks, scroll, forms, vitals, errors, heartbeat,
     * respectDnt, storage) is on: all are, unless set to "false".
     */
    on: (name) => data[name] != 'false',
  };
}
