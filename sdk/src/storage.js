/**
 * localStorage or sessionStorage that never throws: private modes, blocked storage and full
 * quotas throw, and then the tracker goes on without persistence. When `open` gives no storage
 * (storage-free mode: false), nothing is read or kept.
 * @param {() => Storage | false} open
 */
export const safeStorage = (open) => ({
  get(key) {
    try {
      return open().getItem(key);
    } catch {}
  },
  set(key, value) {
    try {
      open().setItem(key, value);
    } catch {}
  },
});
