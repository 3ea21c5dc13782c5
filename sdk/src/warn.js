/** Tells the site's developer, in the console, why something was not tracked. */
export const warn = (message) => console.warn('egis:', message);
