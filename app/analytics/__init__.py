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
Vocabulary   every metric and dimension is defined once, in vocabulary.py (its one-line
             definition and its SQL), which describe_data, the tool descriptions and
             docs/AGENTS.md state.
Revenue      server events with an amount, by `occurred_at`, per currency, in integer minor
             units and in exact major units: gross (positive amounts), refunds (negative), net.
             Orders are positive server events; `orderId` is unique per site, so a resent order
             is stored, and counted, once. Revenue is never sampled.
Attribution  a payment goes to one visit: the one of the server event's `sessionId` when
             that session is a visit; else the latest visit of its `identifiedUserId` (a
             session whose events carry that user id, set by the SDK's identify()) whose entry
             page view is at or before the payment, looking back at most
             ATTRIBUTION_LOOKBACK_DAYS before the period. It is credited to that visit's
             visit:source and visit:channel. Payments without such a visit: '(unattributed)'.
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
reading.py        the one read entry (merge, replica or primary, snapshot, time limit, run)
                  and the reads of one call run at once (`concurrently`)
period.py         the period a tool asks for: local days and their UTC bounds
errors.py         a tool argument's refusal (ArgumentError) and its closest valid value
events.py         the SQL every read shares over the event table (event_scope, sampling)
numbers.py        how figures are written: counts, rates, days, instants
ranking.py        the ranking engine: top keys per dimension in one statement
vocabulary.py     the definitions: metrics and dimensions with their SQL
local_time.py     the site's local hours, days, weeks and months in SQL
filters.py        the `query` tool's filters, parsed and compiled
query/            its compiler, in parts (its __init__ says which)
period_rows.py    the rows it reads for a period: visits, visit pages, quarter-hour counts
overview.py       get_overview: `query`'s headline figures
funnel.py         funnels of pages, goals and custom events, by visit or visitor
describe.py       describe_data: the vocabulary and what a site has
revenue.py        revenue per currency and its attribution to visits' sources and channels
performance.py    web vitals (p75) and JavaScript errors, the Standard-plan types
percentile.py     p75: PostgreSQL's percentile_cont(0.75), the same arithmetic on SQLite
crawlers.py       crawler activity
ingest_health.py  what was stored, and what was not and why
"""
