import { onCLS, onFCP, onINP, onLCP, onTTFB } from 'web-vitals';

/** performance events: each web vital under its name, { "lcp": 1234.5 } (ms; CLS unitless). */
export function captureVitals({ record }) {
  for (const on of [onLCP, onINP, onCLS, onFCP, onTTFB]) on(({ name, value }) => record('performance', 0, { [name.toLowerCase()]: value }));
}
