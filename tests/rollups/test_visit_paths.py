"""The visits' path heads (app.rollups.visit_paths) as the merges keep them, batch after batch,
worked out by hand and equal to what the rebuild derives from the events (assert_as_rebuilt):
repeats folded within a batch and across two, goals among the pages, at most ten nodes, the
largest weight, and a batch stored late whose node lies before the stored ones (both
backends)."""
from datetime import timedelta
from typing import Any

from app.rollups import merging
from models import Event, Visit
from models.site import utcnow
from tests.fixtures.funnel import row
from tests.fixtures.helpers import db
from tests.fixtures.rollups import assert_as_rebuilt, head_table

START = utcnow().replace(microsecond=0) - timedelta(hours=3)


def merge_batch(app, site, nodes: list[tuple[int, str]], session: str = "s-1",
                weight: float = 1.0) -> list[Any]:
    """Store one batch of nodes (minute after START, a path or "goal:<name>") as events of
    `session`, with a click that is no node, merge it; the session's head row."""
    rows = []
    for minute, value in nodes:
        at = START + timedelta(minutes=minute)
        if value.startswith("goal:"):
            rows.append(row(site, session, "v-1", "goal", at, name=value[5:], weight=weight))
        else:
            rows.append(row(site, session, "v-1", "pageview", at, path=value, weight=weight))
        rows.append(row(site, session, "v-1", "click", at, path=value, weight=weight))
    with db(app):
        Event.insert_many(rows).execute()
        merging.merge()
    (found,) = [head for head in head_table(app) if head[1] == session]
    return list(found[2:])


def test_a_head_folds_repeats_within_and_across_batches(app, std_site):
    site = std_site.site
    assert merge_batch(app, site, [(0, "/"), (1, "/")]) == [["/"], START + timedelta(minutes=1),
                                                             1.0]
    # the first node of the batch repeats the stored last: folded
    assert merge_batch(app, site, [(2, "/"), (3, "goal:Signup"), (4, "/pricing")])[0] == [
        "/", "goal:Signup", "/pricing"]
    head = merge_batch(app, site, [(5, "/pricing"), (6, "/"), (7, "/")])
    assert head == [["/", "goal:Signup", "/pricing", "/"], START + timedelta(minutes=7), 1.0]
    assert_as_rebuilt(app)


def test_a_head_keeps_ten_nodes_and_the_last_nodes_time(app, std_site):
    site = std_site.site
    merge_batch(app, site, [(minute, f"/p{minute}") for minute in range(6)])
    head = merge_batch(app, site, [(minute, f"/p{minute}") for minute in range(6, 12)])
    assert head == [[f"/p{minute}" for minute in range(10)], START + timedelta(minutes=11), 1.0]
    # nodes after a full head change its time only
    assert merge_batch(app, site, [(20, "/late")])[:2] == [
        [f"/p{minute}" for minute in range(10)], START + timedelta(minutes=20)]
    assert_as_rebuilt(app)


def test_a_late_batch_before_the_stored_nodes_derives_the_head_again(app, std_site):
    site = std_site.site
    merge_batch(app, site, [(5, "/second"), (6, "/third")])
    # sent later, happened earlier (a queue flushed late): it is the visit's first node
    assert merge_batch(app, site, [(1, "/first")]) == [
        ["/first", "/second", "/third"], START + timedelta(minutes=6), 1.0]
    # and one between two stored nodes, the same page as the one before it: folded
    assert merge_batch(app, site, [(5, "/second")])[0] == ["/first", "/second", "/third"]
    assert merge_batch(app, site, [(3, "/between")])[0] == [
        "/first", "/between", "/second", "/third"]
    assert_as_rebuilt(app)


def test_the_weight_is_the_largest_of_the_nodes_and_sessions_are_apart(app, std_site):
    site = std_site.site
    merge_batch(app, site, [(0, "/")])
    assert merge_batch(app, site, [(1, "/docs")], weight=2.0)[2] == 2.0
    assert merge_batch(app, site, [(0, "/other")], session="s-2") == [
        ["/other"], START, 1.0]
    assert_as_rebuilt(app)


def test_a_session_merged_without_a_head_gets_one_from_all_its_events(app, std_site):
    """Events merged before the session had a node (a click alone), or a visit merged by the
    version before migration 0021 (its head NULL): the next nodes derive the head from all its
    events."""
    site = std_site.site
    with db(app):
        Event.insert_many([row(site, "s-1", "v-1", "click", START, path="/")]).execute()
        merging.merge()
    assert merge_batch(app, site, [(2, "/pricing")]) == [
        ["/pricing"], START + timedelta(minutes=2), 1.0]
    merge_batch(app, site, [(0, "/old"), (1, "goal:Old")], session="s-2")
    with db(app):
        Visit.update(path_head=None, path_end_at=None, path_weight=None).where(
            Visit.session_id == "s-2").execute()
    assert merge_batch(app, site, [(3, "/new")], session="s-2")[0] == ["/old", "goal:Old",
                                                                       "/new"]
    assert_as_rebuilt(app)
