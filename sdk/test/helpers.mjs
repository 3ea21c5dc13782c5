import { safeStorage } from '../src/storage.js';

/** A Web Storage stand-in (getItem/setItem over a Map), wrapped like the tracker wraps storage. */
export function memoryStorage(initial = {}) {
  const items = new Map(Object.entries(initial));
  const storage = safeStorage(() => ({
    getItem: (key) => (items.has(key) ? items.get(key) : null),
    setItem: (key, value) => items.set(key, String(value)),
  }));
  return Object.assign(storage, { items });
}

/** An event as the tracker makes them, small and distinguishable by `n`. */
export const event = (n, type = 'custom') => ({ type, name: `e${n}`, timestamp: 1, pageUrl: 'https://site.example/', properties: {} });
