"""visit:language: the primary subtag of the first Accept-Language entry, if ISO 639-1.

`de-CH,de;q=0.9,en;q=0.8` is `de`. Only the first entry is read (the browser's first choice,
which is how browsers order the header); its quality value is not. `*`, a three-letter or
unknown code, garbage or no header: null. The codes are app/context/data/iso639-1.txt, the
two-letter language codes of Babel's CLDR data, kept as a file: Babel's language names would
cost each worker ~9 MiB for a list of 184 codes.
"""
from pathlib import Path

ISO_639_1 = frozenset(
    line.strip() for line in (Path(__file__).parent / "data" / "iso639-1.txt").read_text()
    .splitlines() if line.strip() and not line.startswith("#"))


def language(accept_language: str | None) -> str | None:
    """The ISO 639-1 code of the first language of an Accept-Language header, or None."""
    if not accept_language:
        return None
    first = accept_language.partition(",")[0].partition(";")[0]
    primary = first.strip().replace("_", "-").partition("-")[0].lower()
    return primary if primary in ISO_639_1 else None
