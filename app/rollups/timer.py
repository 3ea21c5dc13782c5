"""When a worker merges (app.rollups.merging): EGIS_ROLLUP_MERGE_SECONDS after it stored
events (a daemon timer, like app.runtime.tally's buffer; 0: in the request). Every read of the agent
surface merges first as well (app.analytics.reading)."""
import logging

from flask import Flask, current_app
from peewee import PeeweeException

from app.rollups.merging import merge
from app.runtime import background
from app.runtime.debounce import Debounced

log = logging.getLogger(__name__)


class MergeTimer:
    """Merges `interval` seconds after a worker stored events; one per process. No thread runs
    while nothing is stored. Unlike app.runtime.tally's counts nothing is lost when a worker stops
    before its timer: the events are stored, and the next merge or read takes them. A merge
    that found another one running (which may take its events), or whose inserts in flight
    outlasted `wait_seconds`, is tried again an interval later."""

    def __init__(self, interval: float, wait_seconds: float) -> None:
        self._interval = interval
        self._wait_seconds = wait_seconds
        self._timer = Debounced(interval, self._merge_quietly)

    def stored(self) -> None:
        """Events were stored: merge now (interval 0) or within the interval."""
        if self._interval <= 0:
            merge(self._wait_seconds)
            return
        self._timer.poke()

    def _merge_quietly(self) -> bool:
        try:
            with background.own_connection():
                return merge(self._wait_seconds, give_way=True)
        except PeeweeException as error:
            log.warning("could not merge the rollups, trying again: %s", type(error).__name__)
            return False


def stored() -> None:
    """Tell this worker's timer that a request stored events."""
    current_app.extensions["egis_rollups"].stored()


def init_app(app: Flask) -> None:
    app.extensions["egis_rollups"] = MergeTimer(float(app.config["ROLLUP_MERGE_SECONDS"]),
                                                float(app.config["ROLLUP_WAIT_SECONDS"]))
