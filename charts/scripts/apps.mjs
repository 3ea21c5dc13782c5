// The chart apps: each is src/<name>.js, built into dist/<name>.html (build.mjs), checked against
// the size budget (scripts/size.mjs). The titles are the documents' <title>.
export const APPS = {
  query: 'egis query chart',
  funnel: 'egis funnel chart',
  retention: 'egis retention chart',
  paths: 'egis paths chart',
};
