const BASE = 1000;
const CAP = 60000;

/**
 * How long to wait before retry number `attempt` (1 for the first retry): "full jitter", a
 * random delay up to min(60 s, 1 s * 2^(attempt - 1)), but never less than `minimum` (the
 * server's Retry-After).
 * @param {number} attempt
 * @param {number} [minimum] ms
 * @param {() => number} [random]
 */
export const backoffDelay = (attempt, minimum = 0, random = Math.random) =>
  Math.max(minimum, random() * Math.min(CAP, BASE * 2 ** (attempt - 1)));
