"""The `query` compiler: metrics x dimensions x filters of the vocabulary (app.analytics
.vocabulary, where each is defined) into one SQL statement per figure set (rows, totals, a
conversion denominator, a comparison period), on PostgreSQL and SQLite alike (app.storage.dialect).

In parts, in the order a call runs through them:
  arguments   the tool's arguments parsed and validated into a `Query`
  plan        what a statement reads (plan_shape: the rows it hands on): the visit pages or
              quarter hours when they answer (rollup_plans), the visits alone, or the events
              joined to their visits (time_plan for time:* rows with visit figures)
  statement   the SQL: the plan's rows aggregated per row and over everything
  figures     the statements run, their sums made metrics, conversion_rate and percentage
  compare     another period's figures beside each row, and the change
  result      the answer: rows ordered and paged, totals, comparison, warnings (null_rows)

The statement, as CTEs:
  visits          one row per visit of the period (a session id with a page view in the period,
                  with the values of its first page view in the period), built only when a
                  visit metric, dimension or filter needs it: the visit table's rows
                  (models.Visit, merged after ingest) of the visits whose events all lie in the
                  period, and, as a VALUES list, the few that cross its first or last instant,
                  derived from their events in the period (period_rows.visits_cte).
  grouped         the events that event filters select, summed per (event and time dimensions,
                  session); not built when the rows are visits (no event or time dimension,
                  no event filter), which then read the visits alone.
  selected        grouped joined to its visit (or the visits themselves): the dimension values
                  d0, d1, d2, the visit's figures, and the visit filters applied; one row per
                  (dimension values, session), so a visit counts in a row when it has a selected
                  event with the row's values.
  first, parts    per (dimension values, visitor): the event sums, the visit sums and the
                  visitor's weight, in one aggregate; summed per row (grand 0) and over
                  everything (grand 1: the totals), UNION ALL. With an event or time dimension
                  the totals are a statement of their own (figures.figure_rows).
Weights: an event weighs its `weight`; a visit (a visitor) its largest weight.
"""
from app.analytics.query.arguments import Query, parse_query
from app.analytics.query.figures import read_figures
from app.analytics.query.plan import matching_sessions
from app.analytics.query.result import ordered, run_query

__all__ = ["Query", "matching_sessions", "ordered", "parse_query", "read_figures",
           "run_query"]
