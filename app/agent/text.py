"""Short text renderings of the tools' results: the `content` an agent reads beside
`structuredContent`."""
from collections.abc import Callable
from typing import Any

from app.analytics import performance


def _n(value: float | None) -> str:
    return "-" if value is None else f"{value:,}"


def _pct(value: float | None) -> str:
    """A rate as the tools give it: percent, 1 decimal."""
    return "-" if value is None else f"{value:.1f}%"


def _head(result: dict[str, Any], title: str) -> str:
    note = " (estimated: sampled data, scaled by weights)" if result["estimated"] else ""
    zone = f" ({result['timezone']})" if result.get("timezone") else ""
    return f"{title} for {result['site']}, {result['from']} to {result['to']}{zone}{note}"


def _lines(rows: list[dict[str, Any]], line: Callable[[dict[str, Any]], str],
           empty: str = "  (none)") -> list[str]:
    return [f"  {number}. {line(row)}" for number, row in enumerate(rows, 1)] or [empty]


def render_overview(r: dict[str, Any]) -> str:
    duration = r["visit_duration"]
    return "\n".join([
        _head(r, "Overview"),
        f"{_n(r['visitors'])} visitors, {_n(r['visits'])} visits, {_n(r['pageviews'])} page "
        f"views; bounce rate {_pct(r['bounce_rate'])}; visit duration "
        f"{'-' if duration is None else f'{duration} s'}",
        "Events by type: " + (", ".join(f"{name} {_n(count)}" for name, count
                                        in r["events_by_type"].items()) or "none")])


def _money(row: dict[str, Any]) -> str:
    return (f"net {row['net']} {row['currency']} ({_n(row['orders'])} orders, gross "
            f"{row['gross']}, {_n(row['refund_count'])} refunds of {row['refunds']})")


def _credited(key: str) -> Callable[[dict[str, Any]], str]:
    return lambda row: (f"{row[key]}: net {row['net']} {row['currency']} "
                        f"({_n(row['orders'])} orders)")


def render_revenue(r: dict[str, Any]) -> str:
    return "\n".join([_head(r, "Revenue"), *_lines(r["currencies"], _money),
                      "By visit:source (the visit each payment is credited to):",
                      *_lines(r["by_source"], _credited("source")),
                      "By visit:channel:", *_lines(r["by_channel"], _credited("channel"))])


def render_vitals(r: dict[str, Any]) -> str:
    site = ", ".join(f"{metric} {vital['p75']:g} ({vital['rating']})"
                     for metric, vital in r["site_vitals"].items() if vital)
    return "\n".join([_head(r, "Web vitals, p75 (ms; CLS unitless)"),
                      f"Whole site: {site or 'no samples'}",
                      *_lines(r["pages"], lambda row: f"{row['page']} ({_n(row['samples'])} "
                              "samples): " + ", ".join(f"{metric} {row[metric]:g}" for metric
                                                       in performance.VITALS
                                                       if row[metric] is not None))])


def render_errors(r: dict[str, Any]) -> str:
    return "\n".join([_head(r, "Errors"), f"{_n(r['total_errors'])} errors, "
                                          f"{_n(r['distinct_messages'])} distinct messages",
                      *_lines(r["errors"], lambda row: f"{row['message'][:200]}: "
                              f"{_n(row['occurrences'])} times in {_n(row['sessions'])} "
                              f"sessions, last {row['last_seen']}")])


def render_crawlers(r: dict[str, Any]) -> str:
    categories = ", ".join(f"{row['category']} {_n(row['hits'])}" for row in r["categories"])
    return "\n".join([_head(r, "Crawler activity"),
                      f"{_n(r['total_hits'])} hits: {categories or 'none'}", "Crawlers:",
                      *_lines(r["crawlers"], lambda row: f"{row['crawler']} ({row['category']}"
                              f"): {_n(row['hits'])} hits, {_n(row['verified'])} verified, "
                              f"{_n(row['spoofed'])} spoofed, last {row['last_seen']}"),
                      "Top paths:", *_lines(r["top_paths"], lambda row: f"{row['path']}: "
                                            f"{_n(row['hits'])} hits by {_n(row['crawlers'])} "
                                            "crawlers")])


def _ingest_line(row: dict[str, Any]) -> str:
    rejected = ", ".join(f"{reason} {_n(count)}"
                         for reason, count in sorted(row["rejected"].items()))
    return (f"stored {_n(row['events_stored'])} events, {_n(row['server_events_stored'])} "
            f"server events, {_n(row['crawl_hits_stored'])} crawl hits; sampled away "
            f"{_n(row['sampled_away'])}, duplicate batches {_n(row['duplicate_batches'])}, "
            f"orders {_n(row['duplicate_orders'])} and Idempotency-Key repeats "
            f"{_n(row['duplicate_idempotency_keys'])}, bots "
            f"{_n(row['bot_filtered'])}, rejected {_n(row['rejected_total'])}"
            + (f" ({rejected})" if rejected else ""))


def render_ingest(r: dict[str, Any]) -> str:
    return "\n".join([_head(r, "Ingest health"), "Total: " + _ingest_line(r["totals"]),
                      *[f"  {day['date']}: {_ingest_line(day)}" for day in r["days"]]])


def _value(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:,}" if isinstance(value, int | float) else str(value)


def render_query(r: dict[str, Any]) -> str:
    dims = ", ".join(r["dimensions"]) or "no dimension"
    lines = [_head(r, f"{', '.join(r['metrics'])} by {dims}"),
             "Totals: " + ", ".join(f"{name} {_value(value)}" for name, value
                                    in zip(r["metrics"], r["totals"], strict=True))]
    if "comparison" in r:
        lines.append(f"Compared with {r['comparison']['from']} to {r['comparison']['to']}: "
                     + ", ".join(f"{name} {_value(value)}" for name, value in
                                 zip(r["metrics"], r["comparison"]["totals"], strict=True)))

    def line(row: dict[str, Any]) -> str:
        figures = ", ".join(f"{name} {_value(value)}" for name, value
                            in zip(r["metrics"], row["metrics"], strict=True))
        change = ""
        if "comparison" in row:
            change = " (change: " + ", ".join(
                _value(value) for value in row["comparison"]["change"]) + ")"
        keys = " | ".join(_value(value) for value in row["dimensions"])
        return f"{keys}: {figures}{change}" if keys else f"{figures}{change}"

    lines += [f"Rows {len(r['results'])} of {r['total_rows']}:", *_lines(r["results"], line)]
    lines += [f"Warning: {warning}" for warning in r["warnings"]]
    return "\n".join(lines)


def render_funnel(r: dict[str, Any]) -> str:
    def line(step: dict[str, Any]) -> str:
        rate = step["conversion_rate"]
        return (f"{step['label']}: {_n(step['count'])} ({_value(rate)}% of step 1"
                + ("" if step["dropoff"] is None else f", -{_n(step['dropoff'])}") + ")")

    return "\n".join([_head(r, f"Funnel by {r['unit']}"), *_lines(r["steps"], line)])


def _counted(item: dict[str, Any]) -> str:
    return f"{item['name']} ({_n(item['count'])})"


def _carried(item: dict[str, Any]) -> str:
    return f"{item['key']} ({_n(item['count'])}, on {', '.join(item['event_names'])})"


def _named_list(r: dict[str, Any], key: str, shown: Callable[[dict[str, Any]], str]) -> str:
    """The listed names of `key`, each as `shown` says, and how many there are in all when the
    list stops short of them."""
    items = r.get(key, [])
    listed = "; ".join(shown(item) for item in items) or "none"
    total = r.get(f"{key}_total", len(items))
    return listed if total <= len(items) else f"{listed}; the {len(items)} most used of {total}"


def render_describe(r: dict[str, Any]) -> str:
    lines = [_head(r, "Data"),
             f"Events {r.get('first_event') or '-'} to {r.get('last_event') or '-'}; by type: "
             + (", ".join(f"{k} {_n(v)}" for k, v in r.get("events_by_type", {}).items())
                or "none"),
             "Goals: " + _named_list(r, "goals", _counted),
             "Custom events: " + _named_list(r, "custom_events", _counted),
             "Property keys: " + _named_list(r, "properties", _carried),
             "Metrics: " + ", ".join(r["metrics"]),
             "Dimensions: " + ", ".join(r["dimensions"]),
             "Filters on visits by their events: " + ", ".join(r.get("filters", {}))]
    values = r.get("values")
    if values:
        lines.append(f"Values of {values['dimension']}:")
        lines += _lines(values["values"],
                        lambda row: f"{_value(row['value'])}: {_n(row['visitors'])} visitors")
    return "\n".join(lines)


def render_retention(r: dict[str, Any]) -> str:
    def line(row: dict[str, Any]) -> str:
        rates = ", ".join(_pct(rate) for rate in row["retention_rate"])
        return f"{row['cohort']}: {_n(row['visitors'])} visitors; retained {rates}"

    back = r["return_on"] or "any visit"
    return "\n".join([
        _head(r, f"Retention by {r['interval']} ({r['cohort']} cohorts, back on: {back}; "
                 f"current {r['interval']} {r['current_interval']})"),
        *_lines(r["cohorts"], line),
        "Average: " + (", ".join(_pct(rate) for rate in r["average"]["retention_rate"])
                       or "-")])


def render_paths(r: dict[str, Any]) -> str:
    def step(row: dict[str, Any]) -> str:
        return "; ".join(f"{value['value']} {_n(value['visits'])} ({_pct(value['share'])})"
                         for value in row["values"])

    def path(row: dict[str, Any]) -> str:
        return f"{' > '.join(row['path'])}: {_n(row['visits'])} visits"

    return "\n".join([
        _head(r, f"Paths {r['direction']} from {r['anchor']} ({_n(r['visits'])} visits)"),
        *_lines(r["steps"], step), "Top paths:", *_lines(r["top_paths"], path)])
