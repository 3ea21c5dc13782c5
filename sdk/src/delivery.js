import { backoffDelay } from './backoff.js';
import { createQueue } from './queue.js';
import { classifyResponse, retryAfterMs } from './retry-policy.js';
import { chunkBySize, pickWithinBudget } from './split.js';
import { byteLength } from './text.js';
import { warn } from './warn.js';

/** What browsers allow in flight in the keepalive requests of one page, bodies summed. */
export const KEEPALIVE_BUDGET = 65536;
// The events of a batch leave room for its other fields: any batch can go with keepalive.
const MAX_EVENTS_BYTES = KEEPALIVE_BUDGET - 1024;

/**
 * Turns events into batches and gets every batch stored by the service: sends, retries with
 * backoff under the same batch id, keeps what is unacknowledged in the store, and sends with
 * keepalive when the page is hidden. Starts by taking over the batches earlier pages stored.
 * @param {(text: string, keepalive: boolean, gzip: boolean) => Promise<{status: number, body?: any, retryAfter?: string | null}>} post
 * @param {ReturnType<import('./batch-store.js').createBatchStore>} store
 * @param {() => {sessionId: string, anonymousId: string, userId?: string}} context
 *   the batch fields that say who sends
 * @param {() => string} newId
 * @param {boolean} gzip whether sends that are not keepalive are gzipped
 */
export function createDelivery(post, store, context, newId, gzip) {
  const queue = createQueue(flush);
  /**
   * This page's unacknowledged batches by id, oldest first: {batch, sending?, tried?}; `sending`
   * is the kind of request under way ("keepalive", "fetch" or ""); `tried` is set once this
   * page has sent it.
   */
  const entries = new Map(store.all().map((batch) => [batch.id, { batch }]));
  const refusedTypes = new Set();
  let failures = 0;
  let retryTimer = 0;
  let keepaliveBytes = 0;
  let stopped;

  function hold(batch) {
    entries.set(batch.id, { batch });
    store.put(batch);
  }

  function seal() {
    const events = queue.take().filter((event) => !refusedTypes.has(event.type));
    for (const chunk of chunkBySize(events, MAX_EVENTS_BYTES, (event) => byteLength(JSON.stringify(event)) + 1)) {
      hold({ id: newId(), ...context(), events: chunk });
    }
  }

  const body = (batch, compressed) => JSON.stringify({ ...batch, timestamp: Date.now(), compressed });

  async function attempt(entry, text, keepalive) {
    const size = keepalive ? byteLength(text) : 0;
    const mode = keepalive ? 'keepalive' : 'fetch';
    entry.sending = entry.tried = mode;
    keepaliveBytes += size;
    const response = await post(text, keepalive, gzip && !keepalive);
    keepaliveBytes -= size;
    if (entry.sending == mode) entry.sending = '';
    // Superseded by a keepalive send of the same batch (page hide), whose answer decides: the
    // ordinary request was most likely cancelled by the page leaving, which is no reason to wait.
    else if (!keepalive) return;
    settle(entry.batch, response);
  }

  function settle(batch, { status, body: answer, retryAfter }) {
    const verdict = classifyResponse(status, answer);
    if (verdict == 'retry') {
      store.put(batch);
      clearTimeout(retryTimer);
      retryTimer = setTimeout(
        () => {
          retryTimer = 0;
          pump();
        },
        backoffDelay(++failures, retryAfterMs(retryAfter)),
      );
      return;
    }
    entries.delete(batch.id);
    store.remove(batch.id);
    if (verdict == 'done') {
      failures = 0;
    } else if (verdict == 'restricted') {
      for (const type of answer.restrictedTypes) refusedTypes.add(type);
      // Nothing of a refused batch was stored: the other events go out as a new batch.
      const events = batch.events.filter((event) => !refusedTypes.has(event.type));
      if (events.length) {
        hold({ ...batch, id: newId(), events });
        pump();
      }
    } else {
      stopped = stopped || verdict == 'stop';
      warn(`${status} ${answer?.error ?? ''} (${stopped ? 'tracking stopped' : 'batch dropped'})`);
    }
  }

  /** Sends the batches not in flight, unless waiting to retry. */
  function pump() {
    return Promise.all(
      stopped || retryTimer ? [] : [...entries.values()].filter((entry) => !entry.sending).map((entry) => attempt(entry, body(entry.batch, gzip), false)),
    );
  }

  /** Batches what is queued and sends; resolves once those requests are answered. */
  function flush() {
    seal();
    return pump();
  }

  /**
   * The page is hidden, and may be leaving: the batches that fit in the keepalive budget are
   * sent with keepalive and uncompressed (compression is asynchronous, and a leaving page may
   * not live to finish it), even during a backoff: this may be their last chance. The browser
   * delivers them even after the page is gone. The batches never tried leave the store, so that
   * the next page does not send them again, and come back to it only if an answer says to
   * retry. The batches tried before stay stored until an answer settles them: those that an
   * ordinary request is sending (a leaving page cancels that request, or never sends it while
   * it is being compressed) and those waiting to retry. They met an outage, and if the keepalive
   * copy fails too after the page is gone, the next page still has them (at worst sent twice,
   * under the same id: the service stores a batch id once). What does not fit stays stored for
   * the next page, should this one be gone.
   */
  function hide() {
    seal();
    if (stopped) return;
    const unsent = [...entries.values()].filter((entry) => entry.sending != 'keepalive').map((entry) => [entry, body(entry.batch, false)]);
    for (const [entry, text] of pickWithinBudget(unsent, KEEPALIVE_BUDGET - keepaliveBytes, ([, text]) => byteLength(text))) {
      if (!entry.tried) store.remove(entry.batch.id);
      attempt(entry, text, true);
    }
  }

  return {
    flush,
    hide,
    /** Queues an event, unless tracking stopped or the service's plan gate refused its type. */
    add(event) {
      if (!stopped && !refusedTypes.has(event.type)) queue.push(event);
    },
  };
}
