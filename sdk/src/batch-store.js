export const MAX_STORED_BATCHES = 20;
export const MAX_STORED_CHARS = 200000;

/**
 * Batches not yet acknowledged, kept in localStorage so that a reload or the next page of the
 * site delivers them; the oldest are dropped beyond 20 batches or 200,000 characters. Tabs do
 * not lock each other out: a page takes over the stored batches when it starts, so a batch that
 * another tab is sending at that moment goes twice, and the service stores it once (same id).
 * @param {object} storage as made by safeStorage
 * @param {string} key the write key: batches are sent with the key they were made for
 */
export function createBatchStore(storage, key) {
  const name = `egis_batches_${key}`;
  function read() {
    try {
      return JSON.parse(storage.get(name)) || [];
    } catch {
      return [];
    }
  }
  function write(batches) {
    let text;
    while ((text = JSON.stringify(batches)).length > MAX_STORED_CHARS || batches.length > MAX_STORED_BATCHES) batches.shift();
    storage.set(name, text);
  }
  return {
    all: read,
    /** Adds `batch` as the newest, or moves it there. */
    put: (batch) => write([...read().filter((stored) => stored.id != batch.id), batch]),
    remove: (id) => write(read().filter((stored) => stored.id != id)),
  };
}
