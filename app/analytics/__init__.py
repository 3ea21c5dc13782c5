"""Analytics over the stored events: the queries behind the MCP tools.

Every figure is an aggregate computed by the database (Peewee expressions, CTEs, window
functions); Python only reshapes the few aggregated rows that come back. Definitions:

Period       `from`/`to` are calendar days of the site's time zone (UTC by default), both
             inclusive, applied to the skew-corrected event time (`occurred_at`); crawl hits
             and ingest health use the receive time.
Weights      an event stored while its site was over quota carries weight 1/sample rate. Counts
             are SUM(weight) and say `estimated` when any row behind them has a weight other
             than 1. Sampling keeps or drops whole sessions, so a session (or visitor) weighs
             the largest weight among its events.
Session      a session id with at least one page view in the period; visitors are the distinct
             anonymous ids of those sessions.
Bounce       a session with exactly one page view and no interaction: no click, form submit,
             custom event, goal or heartbeat. Scroll, performance and error events are passive.
Engaged time 15 s per heartbeat: the tracker sends one every 15 s while the page is visible, the
             first after 15 s. The average is over sessions.
Page         the path of `page_url`: scheme, host, query string and fragment removed, '/' when
             empty, so a UTM-tagged visit and a plain one count for the same page.
Source       read from the session's entry page view (its first, by time then id): the
             referrer's host, lower-cased, without `www.`; '(direct)' when the referrer is empty,
             not an absolute URL, or the site itself (its domain or a subdomain).
UTM source   the entry page view's `properties.utm_source` when set (the tracker or a backend put
             it there explicitly), else the `utm_source` parameter of its URL's query string, as
             sent (not URL-decoded).
Goals        conversions are weighted goal events; converting sessions have at least one;
             conversion rate = converting sessions / sessions.
Revenue      server events with an amount, by `occurred_at`, per currency, in integer minor
             units and in exact major units: gross (positive amounts), refunds (negative), net.
             Orders are positive server events; `orderId` is unique per site, so a resent order
             is stored, and counted, once. Revenue is never sampled.
Attribution  a payment goes to one session: the one named by the server event's `sessionId`
             when that session has a page view; else the latest session of its
             `identifiedUserId` (a session whose events carry that user id, set by the SDK's
             identify()) whose entry page view is at or before the payment, looking back at most
             ATTRIBUTION_LOOKBACK_DAYS before the period. Its source is the session's UTM source,
             else its referrer source. Payments without such a session: '(unattributed)'.
Web vitals   a performance event carries each metric under its spec name in `properties`:
             `lcp`, `inp`, `cls`, `fcp`, `ttfb` (milliseconds; CLS unitless), one or several
             per event, whichever client sent it; each JSON number there is one sample, and
             other keys and non-numeric values are ignored.
             p75 is percentile_cont(0.75): the linear interpolation at position 0.75 x (n - 1)
             of the ascending values, PostgreSQL's ordered-set aggregate and, on SQLite, an
             aggregate function in Python with the same arithmetic. Percentiles are not
             weighted: a sampled period's samples are a uniform sample of its sessions (the
             result says `estimated`); the sample counts are.
Errors       error events grouped by `properties.message` ('(no message)' when missing).

Modules, one family of queries each:
base.py           the period, one read snapshot, weighted counts, the ranking engine
vocabulary.py     the `query` tool's metrics and dimensions, with their SQL
filters.py        its filters, parsed and compiled
query.py          its compiler: metrics x dimensions x filters, compare
period_rows.py    the rows it reads for a period: visits, visit pages, quarter-hour counts
funnel.py         funnels of pages, goals and custom events, by visit or visitor
describe.py       describe_data: the vocabulary and what a site has
traffic.py        entry page views, count_events, overview, top pages, top sources, goals
revenue.py        revenue per currency and its attribution to traffic sources
performance.py    web vitals (p75) and JavaScript errors, the Standard-plan types
percentile.py     p75: PostgreSQL's percentile_cont(0.75), the same arithmetic on SQLite
crawlers.py       crawler activity
ingest_health.py  what was stored, and what was not and why
"""
