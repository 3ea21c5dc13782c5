import { createApi, inactiveApi } from './api.js';
import { captureClicks } from './capture/clicks.js';
import { captureErrors } from './capture/errors.js';
import { captureForms } from './capture/forms.js';
import { captureHeartbeat } from './capture/heartbeat.js';
import { capturePageViews } from './capture/pageviews.js';
import { captureScroll } from './capture/scroll.js';
import { captureVitals } from './capture/vitals.js';
import { parseOptions } from './options.js';
import { mayTrack } from './privacy.js';
import { safeStorage } from './storage.js';
import { createTracker } from './tracker.js';
import { warn } from './warn.js';

// The entry point: reads the script tag, replaces the stub's window.egis, replays its queue.
function start() {
  const script = document.currentScript;
  const options = parseOptions(script?.dataset ?? {}, script?.src);
  // data-storage="false": the tracker never touches the device's storage, not even to read
  // egis_ignore; a storage that throws (`false.getItem`) holds nothing, and the queue stays in
  // memory.
  const storage = (open) => safeStorage(() => options.on('storage') && open());
  const local = storage(() => localStorage);
  const api = inactiveApi();
  if (!options.key) {
    warn('no data-key');
  } else if (mayTrack(options, navigator, location.hostname, local.get('egis_ignore') == 'true')) {
    const tracker = createTracker(options, local, storage(() => sessionStorage));
    const { delivery } = tracker;
    Object.assign(api, createApi(tracker));
    // On document: web-vitals listens on window in the capture phase, so its last metrics are
    // queued before this send.
    document.addEventListener('visibilitychange', () => document.visibilityState == 'hidden' && delivery.hide());
    addEventListener('pagehide', delivery.hide);
    setInterval(delivery.flush, options.flushInterval);
    captureClicks(tracker, options.on('clicks'));
    if (options.on('scroll')) captureScroll(tracker);
    if (options.on('pageviews')) capturePageViews(tracker);
    if (options.on('forms')) captureForms(tracker);
    if (options.on('vitals')) captureVitals(tracker);
    if (options.on('errors')) captureErrors(tracker);
    if (options.on('heartbeat')) captureHeartbeat(tracker);
    for (const [method, args] of window.egis?.q ?? []) api[method]?.(...args);
    delivery.flush();
  }
  return api;
}

// The stub has a queue, a running tracker has none: a second copy of the script stays idle.
if (!window.egis || window.egis.q) window.egis = start();
