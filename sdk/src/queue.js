export const MAX_BATCH_EVENTS = 50;

/**
 * Events waiting to be put in a batch.
 * @param {() => void} onFull called when a whole batch (50 events) is waiting
 */
export function createQueue(onFull) {
  let events = [];
  return {
    push(event) {
      events.push(event);
      if (events.length >= MAX_BATCH_EVENTS) onFull();
    },
    /** Empties the queue and returns what it held, oldest first. */
    take() {
      const taken = events;
      events = [];
      return taken;
    },
  };
}
