"""The plan for time:* rows with visit figures: a visit counts in the bucket of its first event
in the period (when it has a selected event), an event in the bucket of its own time, so the
two are summed apart."""
from typing import Any

from peewee import JOIN, Select

from app.analytics.events import is_sampled
from app.analytics.period import Period
from app.analytics.query.arguments import Query
from app.analytics.query.plan_shape import (
    EVENT_METRICS,
    Plan,
    event_sums,
    grouped_by,
    keys_of,
    selected_visit_values,
    visit_needs,
)
from app.analytics.vocabulary import Dimension, Row
from models import Event


def time_plan(query: Query, dimensions: tuple[Dimension, ...], built: list[Any], visits: Any,
              visit_condition: Any, where: Any, event_filtered: bool, mixed: bool,
              period: Period, slots: tuple[Select, Select] | None) -> Plan:
    """The visits per (dimension values, session), the events per dimension values and over
    everything (`slots`, the two sums, when the quarter-hour counts answer them); `where`
    selects the events, `visit_condition` the visits."""
    keys = keys_of(dimensions)
    columns = visit_needs(query.metrics, dimensions, query.filters)
    at_start = Row(visits.c, visits.c, period)  # time:* reads the visit's start
    event_keys = [(key, d) for key, d in zip(keys, dimensions, strict=True)
                  if d.kind == "event"]
    filtering = visit_condition if not mixed else None
    if event_keys or event_filtered:
        sessions = (Event.select(*[d.sql(Row(Event, visits.c if mixed else None, period))
                                   .alias(key) for key, d in event_keys],
                                 Event.session_id.alias("sid")))
        if mixed:
            sessions = sessions.join(visits, JOIN.LEFT_OUTER,
                                     on=(visits.c.session_id == Event.session_id))
        sessions = (sessions.where(where)
                    .group_by(*grouped_by([key for key, _d in event_keys]), Event.session_id)
                    .cte("sessions"))
        source = Select([sessions], [
            getattr(sessions.c, key).alias(key) if d.kind == "event"
            else d.sql(at_start).alias(key) for key, d in zip(keys, dimensions, strict=True)]
            + [is_sampled(visits.c.w).alias("sampled"),
               *selected_visit_values(visits, columns)]).join(
            visits, on=(visits.c.session_id == sessions.c.sid))
        ctes = [*built, visits, sessions]
    else:
        source = Select([visits], [*[d.sql(at_start).alias(key) for key, d
                                     in zip(keys, dimensions, strict=True)],
                                   is_sampled(visits.c.w).alias("sampled"),
                                   *selected_visit_values(visits, columns)])
        ctes = [*built, visits]
    selected = (source.where(filtering) if filtering is not None else source).cte("selected")
    ctes.append(selected)
    if not EVENT_METRICS & set(query.metrics):
        return Plan(ctes, selected, True, True)
    if slots is None:
        slots = _event_sums_by(query, dimensions, visits, visit_condition, where, filtering,
                               mixed, period)
    event_rows, event_totals = slots[0].cte("event_rows"), slots[1].cte("event_totals")
    ctes += [event_rows, event_totals]
    return Plan(ctes, selected, True, True, event_totals, event_rows)


def _event_sums_by(query: Query, dimensions: tuple[Dimension, ...], visits: Any,
                   visit_condition: Any, where: Any, filtering: Any, mixed: bool,
                   period: Period) -> tuple[Select, Select]:
    """The events' sums per row and over everything, read from the events: with visit:*
    dimensions and filters, the events of the counted visits only."""
    keys = keys_of(dimensions)
    joined = any(d.kind == "visit" for d in dimensions) or visit_condition is not None
    at_event = Row(Event, visits.c if joined or mixed else None, period)
    condition = where if filtering is None else where & filtering
    if "events" not in query.metrics:  # page views alone: an index range, 1/5 of rows
        condition &= Event.type == "pageview"

    def events_by(names: list[str]) -> Select:
        found = Event.select(*[d.sql(at_event).alias(key) for key, d
                               in zip(keys, dimensions, strict=True) if key in names],
                             *event_sums())
        if joined or mixed:
            found = found.join(visits, JOIN.INNER if joined and not mixed
                               else JOIN.LEFT_OUTER,
                               on=(visits.c.session_id == Event.session_id))
        return found.where(condition).group_by(*grouped_by(names))

    return events_by(keys), events_by([])
