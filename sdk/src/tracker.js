import { createBatchStore } from './batch-store.js';
import { createDelivery } from './delivery.js';
import { randomId } from './ids.js';
import { createIdentity } from './identity.js';
import { createPage } from './page.js';
import { utmProperties } from './properties.js';
import { postBatch } from './transport.js';

/**
 * The tracker of this page: records events with the page's fields and the visitor's identity,
 * and hands them to delivery.
 * @param {ReturnType<import('./options.js').parseOptions>} options
 * @param {object} local localStorage as made by safeStorage (one holding nothing when storage-free)
 * @param {object} session sessionStorage, likewise
 */
export function createTracker({ key, api, on }, local, session) {
  const newId = () => randomId(crypto);
  // Storage-free, the visitor's ids are "-": egis derives the visitor and the visit.
  const identity = createIdentity(local, session, on('storage') ? newId : () => '-');
  const page = createPage();
  const delivery = createDelivery(
    (text, keepalive, gzip) => postBatch(`${api}/api/events`, key, text, keepalive, gzip),
    createBatchStore(local, key),
    () => ({
      sessionId: identity.sessionId(),
      anonymousId: identity.anonymousId,
      userId: identity.userId(),
      fingerprint: { screenWidth: innerWidth },
    }),
    newId,
    typeof CompressionStream == 'function',
  );
  const pageViewListeners = [];

  /** Records an event: see page.event() for the arguments. */
  function record(...args) {
    identity.touch();
    delivery.add(page.event(...args));
  }

  return {
    record,
    identity,
    delivery,
    /** Records a page view of `url` (default: the current URL), then tells the listeners. */
    pageView(url, title) {
      const pageUrl = page.view(url);
      record('pageview', 0, utmProperties(pageUrl), pageUrl, title);
      for (const listener of pageViewListeners) listener();
    },
    /** Calls `listener` after each page view, automatic or not. */
    onPageView: (listener) => pageViewListeners.push(listener),
  };
}
