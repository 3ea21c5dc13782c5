const gzipped = (text) => new Response(new Blob([text]).stream().pipeThrough(new CompressionStream('gzip'))).arrayBuffer();

/**
 * POSTs one batch's JSON text. Without gzip, fetch is called before this returns, which a page
 * that is leaving needs.
 * @returns {Promise<{status: number, body?: any, retryAfter?: string | null}>} status 0 for a
 *   network error; never rejects
 */
export async function postBatch(url, key, text, keepalive, gzip) {
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-API-Key': key, ...(gzip && { 'Content-Encoding': 'gzip' }) },
      body: gzip ? await gzipped(text) : text,
      keepalive,
    });
    return { status: response.status, body: await response.json().catch(() => {}), retryAfter: response.headers.get('Retry-After') };
  } catch {
    return { status: 0 };
  }
}
