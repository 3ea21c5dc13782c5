import { cut } from './text.js';

/**
 * The page being viewed, and the fields every event takes from it. The referrer is
 * document.referrer until the second page view, then the URL of the page view before.
 */
export function createPage() {
  let viewedUrl;
  let referrer = document.referrer;
  return {
    /** Starts a page view of `url` (default: the current URL); returns its absolute URL. */
    view(url) {
      url = new URL(url || location.href, location.href).href;
      referrer = viewedUrl ?? referrer;
      return (viewedUrl = url);
    },
    /** An event of `type`; pageUrl and pageTitle default to the current page's. */
    event: (type, name, properties = {}, pageUrl = location.href, pageTitle = document.title) => ({
      type,
      name: name ? cut(name, 128) : undefined,
      timestamp: Date.now(),
      pageUrl: cut(pageUrl, 2048),
      pageTitle: cut(pageTitle, 1024),
      referrer: cut(referrer, 2048),
      properties,
    }),
  };
}
