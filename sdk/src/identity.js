export const SESSION_TIMEOUT = 30 * 60 * 1000;
/** The anonymous id is renewed after this many months (the EU's audience-measurement limit). */
export const ANONYMOUS_ID_MONTHS = 13;
const ANONYMOUS_KEY = 'egis_aid';
const CREATED_KEY = 'egis_aid_created';
const SESSION_KEY = 'egis_sid';
const USER_KEY = 'egis_uid';
/**
 * The service refuses a batch whose user id may hold an e-mail address: an @ as it is,
 * percent-encoded, full-width or small. The same test here keeps the batches sendable.
 */
const opaque = (id) => id.length <= 128 && !/@|%40|\uff20|\ufe6b/.test(id);

/**
 * The anonymous id in localStorage, renewed when it is 13 months old: its creation time (ms) is
 * stored beside it. An id stored without one (by a tracker before this rule) is renewed too.
 */
function anonymousIdOf(local, newId) {
  const expiry = new Date(+local.get(CREATED_KEY));
  expiry.setMonth(expiry.getMonth() + ANONYMOUS_ID_MONTHS);
  let id = local.get(ANONYMOUS_KEY);
  if (!(id && Date.now() < expiry)) {
    id = newId();
    local.set(CREATED_KEY, Date.now());
  }
  local.set(ANONYMOUS_KEY, id);
  return id;
}

/**
 * Who is browsing: an anonymous id kept in localStorage (no cookies), a session id per tab in
 * sessionStorage that a reload keeps and 30 idle minutes renew, and the user id given to
 * identify(), kept for the tab. Without storage, all three last for the page.
 * @param {object} local localStorage as made by safeStorage
 * @param {object} session sessionStorage as made by safeStorage
 * @param {() => string} newId
 */
export function createIdentity(local, session, newId) {
  const anonymousId = anonymousIdOf(local, newId);
  let visit;
  try {
    visit = JSON.parse(session.get(SESSION_KEY));
  } catch {}
  // An id kept by an earlier tracker, which let "@handle" pass: read through the same test.
  let userId = session.get(USER_KEY);
  if (!(userId && opaque(userId))) userId = undefined;

  return {
    anonymousId,
    /** Records activity now; a new session starts after 30 idle minutes. */
    touch() {
      const now = Date.now();
      if (!(visit?.id && now - visit.last <= SESSION_TIMEOUT)) visit = { id: newId() };
      visit.last = now;
      session.set(SESSION_KEY, JSON.stringify(visit));
    },
    /** The session id as of the last touch(). */
    sessionId: () => visit.id,
    userId: () => userId,
    /**
     * Sets the user id for this tab; null, undefined or "" clear it.
     * @returns {boolean} false when `id` was refused: over 128 characters, or one that may hold
     * an e-mail address (an @, %40, ＠ U+FF20 or ﹫ U+FE6B in it)
     */
    identify(id) {
      id = String(id ?? '');
      if (!opaque(id)) return false;
      userId = id || undefined;
      session.set(USER_KEY, id);
      return true;
    },
  };
}
