"""What every tracking endpoint (events, goals) does before its own payload: the shared gate.

Order: key -> Origin check -> rate limits -> bot filter, so a refused origin or a bot costs no
body parsing, and the rate limits know which key and site they count against.
"""
from collections.abc import Callable
from functools import wraps
from typing import Any

from flask import g, request

from app.access.auth import require_key
from app.crawlers import user_agents
from app.runtime import tally
from app.web.cors import check_origin
from app.web.limits import PER_IP, PER_KEY, limited
from models.api_key import WRITE
from models.ingest_tally import BOT


def is_bot_request() -> bool:
    """A browser request (it has an Origin) from a known bot or headless browser.

    Backends send no Origin and are never bot-filtered: `python-requests` is not a visitor,
    but it is not a fake one either.
    """
    return g.browser and user_agents.is_bot(request.headers.get("User-Agent", ""))


def tracking_endpoint(bot_answer: Callable[[], dict[str, Any]]
                      ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Guard a tracking view; a bot gets `bot_answer()` (200) and only the tally is stored."""

    def decorate(view: Callable[..., Any]) -> Callable[..., Any]:
        @limited(PER_KEY, PER_IP)
        @wraps(view)
        def counted(*args: Any, **kwargs: Any) -> Any:
            if is_bot_request():
                tally.add(g.site.id, BOT)
                return bot_answer()
            return view(*args, **kwargs)

        @require_key(WRITE)
        @wraps(view)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            check_origin(g.site.domain)
            return counted(*args, **kwargs)

        return guarded

    return decorate
