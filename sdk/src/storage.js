/**
 * localStorage or sessionStorage that never throws: private modes, blocked storage and full
 * quotas throw, and then the tracker goes on without persistence.
 * @param {() => Storage} open
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
