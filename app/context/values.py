"""The one rule every derived text value passes before it is stored."""


def storable(value: str | None, max_length: int) -> str | None:
    """`value` if it is printable text of at most `max_length` characters, else None.

    Derived values come from headers and URLs that anyone can write: a NUL (which PostgreSQL
    refuses), a control character, a lone surrogate or an absurd length is nothing worth
    storing, and never a reason to refuse the batch.
    """
    if value and len(value) <= max_length and value.isprintable():
        return value
    return None
