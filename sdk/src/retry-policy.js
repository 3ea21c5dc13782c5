/**
 * What a response means for the batch that was sent:
 * "done" (stored, or a duplicate of a stored batch), "retry" (network error = status 0, 429,
 * 5xx: the same batch again later), "restricted" (403 naming plan-gated event types: send the
 * other events under a new batch id), "stop" (401 bad key, 403 foreign origin: nothing this
 * page sends can succeed) or "drop" (any other refusal, such as 400: never retried).
 * @param {number} status
 * @param {any} body the parsed JSON body, if any
 */
export function classifyResponse(status, body) {
  if (status >= 200 && status < 300) return 'done';
  if (!status || status == 429 || status >= 500) return 'retry';
  if (status == 403 && body?.restrictedTypes?.length) return 'restricted';
  return status == 401 || status == 403 ? 'stop' : 'drop';
}

/**
 * A Retry-After header in milliseconds; 0 when absent or not a number of seconds (the form the
 * service sends).
 * @param {string | null | undefined} header
 */
export const retryAfterMs = (header) => header * 1000 || 0;
