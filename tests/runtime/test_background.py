"""What a worker does later, off the request (app.runtime.background): a daemon timer, and a
database connection of the thread's own."""
import threading

from app.runtime import background
from models import database
from tests.fixtures.helpers import wait_for


def test_later_runs_the_call_in_a_daemon_thread_of_its_own():
    ran: list[threading.Thread] = []
    timer = background.later(0.01, lambda: ran.append(threading.current_thread()))
    assert timer.daemon
    wait_for(lambda: ran)
    assert ran == [timer]


def test_a_connection_is_opened_for_the_block_and_closed_after_it(app):
    seen: list[bool] = []

    def in_a_thread() -> None:
        with app.app_context():
            seen.append(database.is_closed())
            with background.own_connection():
                seen.append(database.is_closed())
                seen.append(database.execute_sql("SELECT 1").fetchone()[0] == 1)
            seen.append(database.is_closed())

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join(10)
    assert seen == [True, False, True, True]


def test_the_threads_own_connection_is_left_open(app):
    with app.app_context(), database.connection_context():
        before = database.connection()
        with background.own_connection():
            assert database.connection() is before
        assert not database.is_closed()
