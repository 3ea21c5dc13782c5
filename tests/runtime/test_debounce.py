"""app.runtime.debounce: one run pending at a time, however many pokes; again when not done."""
import threading

from app.runtime.debounce import Debounced
from tests.fixtures.helpers import wait_for


def test_many_pokes_within_an_interval_run_the_work_once():
    runs = []
    timer = Debounced(0.05, lambda: runs.append(1) or True)
    for _ in range(20):
        timer.poke()
    assert wait_for(lambda: runs == [1])
    timer.poke()  # a poke after the run schedules the next one
    assert wait_for(lambda: runs == [1, 1])


def test_work_that_is_not_done_runs_again_an_interval_later():
    outcomes = iter([False, False, True])
    runs = []
    done = threading.Event()

    def work() -> bool:
        runs.append(1)
        finished = next(outcomes)
        if finished:
            done.set()
        return finished

    Debounced(0.02, work).poke()
    assert done.wait(5)
    assert len(runs) == 3
