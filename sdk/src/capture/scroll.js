import { depthsReached } from '../scroll-depth.js';

/** scroll events at 25, 50, 75 and 100 percent of the page, each once per page view. */
export function captureScroll({ record, onPageView }) {
  let reported = new Set();
  const check = () => {
    for (const depth of depthsReached(scrollY + innerHeight, document.documentElement.scrollHeight)) {
      if (!reported.has(depth)) {
        reported.add(depth);
        record('scroll', 0, { depth });
      }
    }
  };
  // An SPA renders the new page after the URL changes: look once it had a moment.
  const checkSoon = () => setTimeout(check, 100);
  onPageView(() => {
    reported = new Set();
    checkSoon();
  });
  addEventListener('scroll', check);
  checkSoon();
}
