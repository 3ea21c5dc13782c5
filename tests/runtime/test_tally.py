"""What was not stored is counted in each worker's memory and written every TALLY_FLUSH_SECONDS
(app.runtime.tally): nothing lost when the database is away for a while, nor when a worker stops."""
import logging
import time
from datetime import UTC, date, datetime

import pytest
from flask import Flask

from app.runtime import tally
from app.storage.db import make_database
from models import IngestTally, database
from tests.fixtures.helpers import db
from tests.fixtures.servers import free_port, stop_server
from tests.fixtures.tracking import (
    HEADLESS_UA,
    batch,
    dumps,
    post_live,
    tallies,
    wait_for_tallies,
)

NEW_YEAR = date(2026, 1, 1)


def count(app: Flask, site_id: int, reason: str, how_many: int = 1,
          day: date | None = None) -> None:
    with app.app_context():  # no connection: a buffered count needs none
        tally.add(site_id, reason, how_many, day)


def test_counts_wait_in_memory_and_go_in_one_write_per_site_day_and_reason(
        make_app, std_site, free_site):
    app = make_app(TALLY_FLUSH_SECONDS=3600)
    count(app, std_site.site.id, "bot")
    count(app, std_site.site.id, "bot", 4)
    count(app, std_site.site.id, "sampled", 0)  # nothing to count
    count(app, std_site.site.id, "bot", 2, day=NEW_YEAR)
    count(app, free_site.site.id, "duplicate")
    assert tallies(app) == {}

    app.extensions["egis_tally"].flush()
    assert tallies(app, std_site.site.id) == {"bot": 7}
    assert tallies(app, free_site.site.id) == {"duplicate": 1}
    count(app, std_site.site.id, "bot", 3)
    app.extensions["egis_tally"].flush()
    app.extensions["egis_tally"].flush()  # nothing left: writes nothing more
    assert tallies(app, std_site.site.id) == {"bot": 10}


def test_the_timer_writes_them_without_being_asked(make_app, std_site):
    app = make_app(TALLY_FLUSH_SECONDS=0.05)
    count(app, std_site.site.id, "rejected_429", 2)
    assert wait_for_tallies(app, {"rejected_429": 2}) == {"rejected_429": 2}
    count(app, std_site.site.id, "rejected_429")  # a new interval starts with the next count
    assert wait_for_tallies(app, {"rejected_429": 3}) == {"rejected_429": 3}


def test_counts_that_could_not_be_written_are_kept_for_the_next_write(
        make_app, migrated, std_site, caplog):
    app = make_app(TALLY_FLUSH_SECONDS=3600)
    count(app, std_site.site.id, "bot", 2)
    make_app(DATABASE_URL=f"postgresql://postgres@127.0.0.1:{free_port()}/nowhere")
    with caplog.at_level(logging.WARNING, logger="app.runtime.tally"):
        app.extensions["egis_tally"].flush()
    assert "could not write 1 tallies, kept for the next try: OperationalError" in caplog.text
    count(app, std_site.site.id, "bot")  # the database still away

    database.initialize(make_database(migrated))
    app.extensions["egis_tally"].flush()
    assert tallies(app) == {"bot": 3}


def test_the_timer_tries_again_until_the_database_is_back(make_app, migrated, std_site, caplog):
    app = make_app(TALLY_FLUSH_SECONDS=0.05)
    make_app(DATABASE_URL=f"postgresql://postgres@127.0.0.1:{free_port()}/nowhere")
    with caplog.at_level(logging.WARNING, logger="app.runtime.tally"):
        count(app, std_site.site.id, "rejected_413", 2)
        deadline = time.monotonic() + 15
        while "could not write" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.05)
    assert "could not write 1 tallies, kept for the next try" in caplog.text

    database.initialize(make_database(migrated))  # no count since: the timer alone writes
    assert wait_for_tallies(app, {"rejected_413": 2}) == {"rejected_413": 2}


def test_written_at_once_when_the_interval_is_zero(app, std_site):
    with db(app):
        tally.add(std_site.site.id, "bot")
    assert tallies(app) == {"bot": 1}


@pytest.mark.slow
def test_a_stopping_server_writes_what_its_workers_counted(start_server, app, std_site):
    """An interval no test waits for: only the workers' way out can write the counts."""
    server = start_server(workers=2, env={"EGIS_TALLY_FLUSH_SECONDS": "3600"})
    headers = std_site.write_headers(Origin="https://std.example", **{"User-Agent": HEADLESS_UA})
    answers = [post_live(server.url, dumps(batch()), headers)[0] for _ in range(12)]
    assert answers == [200] * 12
    assert tallies(app) == {}  # not written in the requests

    stop_server(server)
    assert tallies(app) == {"bot": 12}, server.log()


# --- tally ----------------------------------------------------------------------------------

def test_tally_upserts_per_site_day_and_reason(app, std_site, free_site):
    with db(app):
        tally.add(std_site.site.id, "bot")
        tally.add(std_site.site.id, "bot", 4)
        tally.add(std_site.site.id, "sampled", 0)  # nothing to count: no row
        tally.add(std_site.site.id, "bot", 2, day=date(2026, 1, 1))
        tally.add(free_site.site.id, "bot")
        tally.add_quietly(free_site.site.id, "duplicate")
        rows = {(r.site_id, r.day, r.reason): r.count for r in IngestTally.select()}
    today = datetime.now(UTC).date()
    assert rows == {(std_site.site.id, today, "bot"): 5,
                    (std_site.site.id, date(2026, 1, 1), "bot"): 2,
                    (free_site.site.id, today, "bot"): 1,
                    (free_site.site.id, today, "duplicate"): 1}
    assert tallies(app, std_site.site.id) == {"bot": 7}

