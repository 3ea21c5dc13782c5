"""When a worker merges (app.rollups.timer): at once with an interval of 0, else once, an
interval after it stored events, however many requests stored them."""
from app.rollups.timer import MergeTimer
from models import database
from tests.fixtures.helpers import wait_for
from tests.fixtures.rollups import merged_state, post


def test_an_interval_of_zero_merges_in_the_call(lazy_app, lazy_client, std_site):
    post(lazy_client, std_site, "s1", "v1", views=2)
    visits, mark, largest = merged_state(lazy_app)
    assert (visits, mark < largest) == (0, True)  # stored, not merged: the app's timer waits
    with lazy_app.app_context(), database.connection_context():
        MergeTimer(0, 2.0).stored()  # in the request: its connection
    assert merged_state(lazy_app) == (1, largest, largest)


def test_a_timer_merges_an_interval_after_the_first_store(lazy_app, lazy_client, std_site):
    post(lazy_client, std_site, "s1", "v1")
    timer = MergeTimer(0.2, 2.0)
    with lazy_app.app_context():
        timer.stored()
        post(lazy_client, std_site, "s2", "v2")
        timer.stored()  # within the interval: the same merge takes both
    assert merged_state(lazy_app)[0] == 0
    _visits, _mark, largest = merged_state(lazy_app)
    assert wait_for(lambda: merged_state(lazy_app) == (2, largest, largest),
                    seen=lambda: merged_state(lazy_app))
