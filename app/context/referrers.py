"""Known referrers: app/context/data/referrers.csv (match, name, kind), read once at import.

A host matches its own row or its nearest parent domain's (news.google.com: google.com, unless
a row names it), then a `label.*` row for that label before a top-level domain (google.de,
google.co.uk: google.*). A bare word (no dot) matches a utm_source only. The table's header says
how to add a row; each kind's rows decide the channel (app/context/acquisition.py).
"""
import csv
from dataclasses import dataclass
from pathlib import Path

TABLE = Path(__file__).parent / "data" / "referrers.csv"
KINDS = ("search", "social", "ai", "email", "")
# Second-level labels under which a country's top-level domain registers names (google.co.uk).
COUNTRY_SECOND_LEVELS = frozenset({"co", "com", "ac", "ne", "or", "org", "net", "gov", "edu"})


@dataclass(frozen=True, slots=True)
class Referrer:
    name: str
    kind: str  # search, social, ai, email, or "" (a named referrer)


def _load() -> tuple[dict[str, Referrer], dict[str, Referrer], dict[str, Referrer]]:
    hosts: dict[str, Referrer] = {}
    labels: dict[str, Referrer] = {}
    words: dict[str, Referrer] = {}
    lines = [line for line in TABLE.read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    for match, name, kind in csv.reader(lines):
        if kind not in KINDS:
            raise ValueError(f"{TABLE.name}: {match}: unknown kind {kind!r}")
        known = Referrer(name, kind)
        if match.endswith(".*"):
            labels[match[:-2]] = known
        elif "." in match:
            hosts[match] = known
        else:
            words[match] = known
    return hosts, labels, words


HOSTS, LABELS, WORDS = _load()


def by_host(host: str) -> Referrer | None:
    """The known referrer for a host (lower case, without `www.`), or None."""
    labels = host.split(".")
    for start in range(len(labels) - 1):
        known = HOSTS.get(".".join(labels[start:]))
        if known is not None:
            return known
    for position, label in enumerate(labels[:-1]):
        known = LABELS.get(label)
        suffix = labels[position + 1:]
        if known is not None and (len(suffix) == 1 or (
                len(suffix) == 2 and suffix[0] in COUNTRY_SECOND_LEVELS)):
            return known
    return None


def by_source(utm_source: str) -> Referrer | None:
    """The known referrer a utm_source names (`google`, `fb`, `chatgpt.com`), or None."""
    value = utm_source.strip().lower()
    return WORDS.get(value) or by_host(value.removeprefix("www."))
