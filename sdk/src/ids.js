/**
 * A random id: a UUID where randomUUID exists (secure contexts: https and localhost), else 128
 * random bits written as four decimal numbers.
 * @param {Crypto} crypto
 */
export const randomId = (crypto) => crypto.randomUUID?.() ?? crypto.getRandomValues(new Uint32Array(4)).join('-');
