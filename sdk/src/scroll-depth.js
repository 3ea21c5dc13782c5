export const SCROLL_DEPTHS = [25, 50, 75, 100];

/**
 * The depths (percent of the page's height) that the bottom of the viewport has reached; all of
 * them when the page fits the viewport. A pixel of slack absorbs fractional scroll positions.
 * @param {number} viewportBottom scroll offset plus viewport height, in px
 * @param {number} pageHeight
 */
export const depthsReached = (viewportBottom, pageHeight) =>
  SCROLL_DEPTHS.filter((depth) => viewportBottom + 1 >= (pageHeight * depth) / 100);
