/**
 * Page views: one now, then one whenever an SPA changes the URL's path or query string
 * (history.pushState, history.replaceState, back/forward). Fragment changes are not page views.
 */
export function capturePageViews({ pageView }) {
  let viewedPath;
  const check = () => {
    const path = location.pathname + location.search;
    if (path != viewedPath) {
      viewedPath = path;
      pageView();
    }
  };
  for (const method of ['pushState', 'replaceState']) {
    const original = history[method];
    history[method] = function (...args) {
      const result = original.apply(this, args);
      check();
      return result;
    };
  }
  addEventListener('popstate', check);
  check();
}
