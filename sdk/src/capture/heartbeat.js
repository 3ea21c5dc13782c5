export const HEARTBEAT_SECONDS = 15;

/** A heartbeat event after every 15 s of visibility; hidden time does not count. */
export function captureHeartbeat({ record }) {
  let visibleSeconds = 0;
  setInterval(() => document.visibilityState == 'visible' && ++visibleSeconds % HEARTBEAT_SECONDS == 0 && record('heartbeat'), 1000);
}
