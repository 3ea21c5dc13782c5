import { cut } from './text.js';

const DOWNLOAD_EXTENSION = /\.(pdf|zip|rar|7z|gz|dmg|pkg|exe|msi|apk|csv|docx?|xlsx?|pptx?|mp3|mp4)$/i;

/**
 * Click properties that describe a link: href (at most 2048 characters; for mailto:, tel: and
 * other non-web links only the scheme, the rest being an address or a number), outbound for a
 * link to another host, download for a file.
 * @param {string} href the link's absolute href
 * @param {boolean} hasDownloadAttribute
 * @param {string} pageHostname
 */
export function linkProperties(href, hasDownloadAttribute, pageHostname) {
  let url;
  try {
    url = new URL(href);
  } catch {
    return {};
  }
  const web = /^https?:$/.test(url.protocol);
  return {
    href: web ? cut(href, 2048) : url.protocol,
    outbound: (web && url.hostname != pageHostname) || undefined,
    download: hasDownloadAttribute || DOWNLOAD_EXTENSION.test(url.pathname) || undefined,
  };
}
