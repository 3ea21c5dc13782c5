/**
 * Cuts `items` into consecutive chunks of at most `maxBytes` in total; an item larger than that
 * gets a chunk of its own.
 * @template T
 * @param {T[]} items
 * @param {number} maxBytes
 * @param {(item: T) => number} sizeOf
 * @returns {T[][]}
 */
export function chunkBySize(items, maxBytes, sizeOf) {
  const chunks = [];
  let current;
  let bytes = maxBytes;
  for (const item of items) {
    const size = sizeOf(item);
    if (bytes + size > maxBytes) {
      chunks.push((current = []));
      bytes = 0;
    }
    current.push(item);
    bytes += size;
  }
  return chunks;
}

/**
 * Picks, in order, the items that fit together within `budget` bytes. The others are left for
 * later; an item larger than the whole budget is never picked.
 * @template T
 * @param {T[]} items
 * @param {number} budget
 * @param {(item: T) => number} sizeOf
 * @returns {T[]}
 */
export function pickWithinBudget(items, budget, sizeOf) {
  return items.filter((item) => {
    const size = sizeOf(item);
    return size <= budget && (budget -= size) >= 0;
  });
}
