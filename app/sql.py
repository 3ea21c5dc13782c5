"""What PostgreSQL and SQLite spell differently, and URL parts in SQL that both agree on."""
from typing import Any

from peewee import (
    Case,
    ColumnBase,
    Expression,
    fn,
)

from app.db import is_postgres


def _find(text: Any, needle: str) -> ColumnBase:
    """1-based position of `needle` in `text`, 0 when absent."""
    return fn.strpos(text, needle) if is_postgres() else fn.instr(text, needle)


def _json_member(column: Any, key: str, operator: str) -> Expression:
    # The ->/->> operators: cheaper than jsonb_extract_path (no variadic array per row).
    # coerce(False) keeps Peewee from passing `key` through the JSON field's db_value.
    return Expression(column.coerce(False), operator, key)


def json_text(column: Any, key: str) -> ColumnBase:
    if is_postgres():
        return _json_member(column, key, "->>")
    return fn.json_extract(column, f"$.{key}").coerce(False).cast("TEXT")


def json_number(column: Any, key: str) -> ColumnBase:
    """The member as a number; NULL when it is missing or not a JSON number."""
    if is_postgres():
        is_number = fn.jsonb_typeof(_json_member(column, key, "->")) == "number"
        value = _json_member(column, key, "->>").cast("double precision")
    else:
        is_number = fn.json_type(column, f"$.{key}").in_(("integer", "real"))
        value = fn.json_extract(column, f"$.{key}").coerce(False)
    return Case(None, [(is_number, value)])


def bytewise(column: Any) -> Any:
    """Order text by code point on both backends (SQLite's default), whatever the collation."""
    return column.collate('"C"') if is_postgres() else column


def _before_first(text: Any, stops: str) -> ColumnBase:
    """`text` up to the first of the characters in `stops` (all of it when none occurs)."""
    marker = stops[0]
    marked = text
    for stop in stops[1:]:
        marked = fn.replace(marked, stop, marker)
    return fn.substr(text, 1, _find(marked.concat(marker), marker) - 1)


def url_path(url: Any) -> ColumnBase:
    bare = _before_first(url, "?#")
    scheme_end = _find(bare, "://")
    authority_on = fn.substr(bare, scheme_end + 3)
    path = Case(None, [(scheme_end > 0,
                        fn.substr(authority_on, _find(authority_on.concat("/"), "/")))], bare)
    return fn.COALESCE(fn.NULLIF(path, ""), "/")


def url_host(url: Any) -> ColumnBase:
    """Lower-cased host without `www.`; NULL unless `url` is absolute."""
    scheme_end = _find(url, "://")
    host = fn.lower(_before_first(fn.substr(url, scheme_end + 3), "/?#:"))
    bare = Case(None, [(fn.substr(host, 1, 4) == "www.", fn.substr(host, 5))], host)
    return Case(None, [(scheme_end > 0, fn.NULLIF(bare, ""))])


def query_param(url: Any, name: str) -> ColumnBase:
    first, later = _find(url, f"?{name}="), _find(url, f"&{name}=")
    at = Case(None, [(first > 0, first)], later)
    value = _before_first(fn.substr(url, at + len(name) + 2), "&#")
    return Case(None, [(at > 0, fn.NULLIF(value, ""))])


def page_path(event: Any) -> ColumnBase:
    """An event's page path: its `path`; rows stored before that column derive it from
    page_url (an event without a page has none)."""
    return fn.COALESCE(event.path, Case(None, [(event.page_url.is_null(False),
                                                url_path(event.page_url))]))


def wide(weight: Any) -> Any:
    """A weight (a REAL column) as double precision, for summing: PostgreSQL sums REAL as
    REAL, which stops counting at 2^24 (16.8 million: 17 million weights of 1 sum to
    16,777,216) and rounds every fractional weight it adds long before."""
    return weight.cast("DOUBLE PRECISION")
