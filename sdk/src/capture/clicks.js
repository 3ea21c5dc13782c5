import { linkProperties } from '../links.js';
import { cut } from '../text.js';

const clean = (text, max) => cut(cut(text, 4 * max).replace(/\s+/g, ' ').trim(), max) || undefined;

/**
 * goal events for clicks on (or inside) elements marked data-goal="name", always: the mark is
 * the site's own request. With `clickEvents`, also click events for links and buttons: tag,
 * position on the page and a few safe attributes.
 */
export function captureClicks({ record }, clickEvents) {
  document.addEventListener(
    'click',
    (event) => {
      const goal = event.target.closest?.('[data-goal]')?.dataset.goal.trim();
      const element = event.target.closest?.('a,button');
      if (goal) record('goal', goal);
      if (!clickEvents || !element) return;
      const { href, ...link } = element.tagName == 'A' ? linkProperties(element.href, element.hasAttribute('download'), location.hostname) : {};
      record('click', 0, {
        element: element.tagName.toLowerCase(),
        position: { x: event.pageX, y: event.pageY },
        attributes: { id: clean(element.id, 256), class: clean(element.getAttribute('class'), 256), href, text: clean(element.textContent, 100) },
        ...link,
      });
    },
    true,
  );
}
