"""A tool argument's refusal: the one sentence the agent reads, naming the closest valid value."""
from difflib import get_close_matches
from typing import Any


class ArgumentError(ValueError):
    """A bad argument of a tool; the message is the one sentence the agent reads."""


def closest(word: str, valid: list[str] | tuple[str, ...]) -> str:
    """' Did you mean 'x'?' for the valid name closest to `word`, or ''."""
    found = get_close_matches(str(word), list(valid), n=1, cutoff=0.5)
    return f" Did you mean '{found[0]}'?" if found else ""


def unknown(what: str, word: Any, valid: list[str] | tuple[str, ...]) -> ArgumentError:
    """`Unknown metric 'visit'. Did you mean 'visits'? Valid metrics: a, b, c.`"""
    return ArgumentError(f"Unknown {what} {word!r}.{closest(word, valid)} "
                         f"Valid {what}s: {', '.join(valid)}.")
