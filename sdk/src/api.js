import { checkedProperties, errorProperties } from './properties.js';
import { warn } from './warn.js';

export const METHODS = ['trackGoal', 'track', 'trackPageView', 'identify', 'trackError', 'flush'];

/** window.egis when tracking is off: the same methods, doing nothing. */
export const inactiveApi = () => Object.fromEntries(METHODS.map((method) => [method, async () => {}]));

/**
 * window.egis: the six SDK methods.
 * @param {ReturnType<import('./tracker.js').createTracker>} tracker
 */
export function createApi({ record, pageView, identity, delivery }) {
  const named = (type) => (name, properties) => (name ? record(type, name, checkedProperties(properties)) : warn(`${type}: name required`));
  return {
    trackGoal: named('goal'),
    track: named('custom'),
    trackPageView: pageView,
    identify: (userId) => identity.identify(userId) || warn('identify: not an e-mail, 128 characters at most'),
    trackError: (error, context) => record('error', 0, checkedProperties(errorProperties(error, context))),
    /** Sends what is waiting; resolves once those requests are answered. */
    flush: delivery.flush,
  };
}
