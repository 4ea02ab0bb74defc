"""One client's many pages share the server's queue of runs fairly with everyone else's (services/train_queue.py); a
download of a run waits its turn in the same queue (link/train.py); a number of any size a page sends is checked
before it becomes a float (session/training.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from bokeh.document import Document

from services.train_queue import TrainQueue
from tests.test_train_tab import ServedDoc, open_tab, send


class Doc(Document):
    """A served page's document opened from ``address``; its next-tick callbacks run when the test says."""

    def __init__(self, address: str):
        super().__init__()
        self.ticks = []
        self._context = SimpleNamespace(id=address, request=SimpleNamespace(remote_ip=address))

    @property
    def session_context(self):
        return self._context

    def add_next_tick_callback(self, fn):
        self.ticks.append(fn)


class Page:
    def __init__(self, log, name):
        self.log, self.name = log, name

    def compute(self):
        self.log.append(self.name)


def _drain(queue: TrainQueue, waits: list, docs: list) -> None:
    """Run the queue's turns and the pages' turns until nothing is left."""
    while waits:
        waits.pop(0)[1]()
        for d in docs:
            while d.ticks:
                d.ticks.pop(0)()


def test_fifty_pages_of_one_client_wait_their_turns_with_another_clients_one(monkeypatch):
    """50 pages of one client pressing New seed had 50 places in the one line: another learner's run came 51st
    (4-4.75 s instead of 44 ms). Now each client has a line, and the queue takes from each in turn."""
    monkeypatch.setattr("services.train_queue.page_left", lambda doc: False, raising=False)
    waits = []
    queue = TrainQueue(later=lambda delay, fn: waits.append((delay, fn)))
    log = []
    many = [(Doc("10.0.0.66"), Page(log, f"many{i}")) for i in range(50)]
    other = (Doc("10.0.0.7"), Page(log, "other"))
    for doc, page in many:
        queue.submit(doc, page.compute)
    queue.submit(*other[:1], other[1].compute)
    _drain(queue, waits, [d for d, _ in many] + [other[0]])
    assert log.index("other") <= 1 and len(log) == 51


def test_a_client_is_its_address_and_a_page_without_one_is_its_own():
    from services.train_queue import client_of

    assert client_of(Doc("10.0.0.7")) == client_of(Doc("10.0.0.7")) != client_of(Doc("10.0.0.8"))
    a, b = Document(), Document()
    assert client_of(a) != client_of(b)


def test_what_a_page_that_has_left_asked_for_is_skipped(monkeypatch):
    waits = []
    queue = TrainQueue(later=lambda delay, fn: waits.append((delay, fn)))
    log = []
    gone, staying = Doc("10.0.0.66"), Doc("10.0.0.7")
    monkeypatch.setattr("services.train_queue.page_left", lambda doc: doc is gone, raising=False)
    pages = [Page(log, "gone"), Page(log, "staying")]
    queue.submit(gone, pages[0].compute)
    queue.submit(staying, pages[1].compute)
    _drain(queue, waits, [gone, staying])
    assert log == ["staying"]


def test_a_download_waits_for_the_queue_and_a_pages_newest_request_replaces_its_waiting_one(monkeypatch):
    """20 pages downloading the run (420 kB, 44 ms of the loop) every 0.2 s held every key over 300 ms: each download
    was made the moment it was asked for. Now it waits its turn in the queue of runs, one per page at a time."""
    queue = TrainQueue(later=lambda delay, fn: None)
    monkeypatch.setattr("link.train.get_queue", lambda: queue, raising=False)
    page, doc, tab = open_tab(ServedDoc())
    sent, made = [], []
    monkeypatch.setattr(tab, "_send_msg", sent.append)
    original = tab.on_download
    tab.on_download = lambda kind: made.append(kind) or original(kind)
    doc.serve()
    send(doc, tab, action="download", kind="json")
    send(doc, tab, action="download", kind="csv")
    assert sent == [] and len(queue) == 1  # nothing made yet: one request waits, the newest
    queue.waiting()[0][1]()()
    assert [m["download"] for m in sent] == ["training-run.csv"] and made == ["csv"]
    send(doc, tab, action="download", kind="csv")  # the same run again: the file made once is sent
    queue.waiting()[-1][1]()()
    assert len(sent) == 2 and sent[1]["text"] == sent[0]["text"] and made == ["csv"]


@pytest.mark.parametrize("action", ["learning_rate", "temperature"])
@pytest.mark.parametrize("value", [10**400, -(10**400), 2**1024], ids=["1e400", "-1e400", "2^1024"])
def test_a_number_of_any_size_is_refused_with_a_message(action, value):
    """``{"action": "learning_rate", "value": 10**400}`` raised OverflowError in float(): a 5 kB traceback and a
    closed socket. A number past a float's range is now refused like any number out of the setting's range."""
    page, doc, tab = open_tab()
    t = page.state.training
    before = (t.learning_rate, t.temperature)
    send(doc, tab, action=action, value=value)
    assert (t.learning_rate, t.temperature) == before and "refused" in str(t.message)


def test_a_client_that_comes_while_anothers_run_is_computed_goes_before_that_clients_next(monkeypatch):
    """The client served went back in line as its run was taken, so another learner who pressed New seed while one
    of the 50 pages' runs was computed waited for that run and one more of theirs. Now the client served goes back in
    line once its run is done, behind whoever came meanwhile."""
    monkeypatch.setattr("services.train_queue.page_left", lambda doc: False, raising=False)
    waits = []
    queue = TrainQueue(later=lambda delay, fn: waits.append((delay, fn)))
    log = []
    many = [(Doc("10.0.0.66"), Page(log, f"many{i}")) for i in range(3)]
    other = (Doc("10.0.0.7"), Page(log, "other"))
    for doc, page in many:
        queue.submit(doc, page.compute)
    waits.pop(0)[1]()  # the queue takes many0: its run waits for its page's turn of the loop
    queue.submit(other[0], other[1].compute)  # while many0's run is computed
    many[0][0].ticks.pop(0)()  # many0's run; the queue rests after it
    _drain(queue, waits, [d for d, _ in many] + [other[0]])
    assert log == ["many0", "other", "many1", "many2"]


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _flood_share(with_learner: bool, seconds: float = 10.0, cost: float = 0.003) -> float:
    """One client's pages sending events back to back (each ``cost`` s of the loop), for ``seconds``, beside a learner
    whose page sends one every 0.25 s (or alone): the share of the loop the flood's events took."""
    from services.pacing import ClientShares

    clock = Clock()
    shares = ClientShares(clock=clock)
    busy, learner_next = 0.0, 0.0
    while clock.now < seconds:
        if with_learner and clock.now >= learner_next:
            shares.seen("learner")
            shares.charge("learner", 0.003)
            clock.now += 0.003
            learner_next += 0.25
        shares.seen("flood")
        wait = shares.wait("flood")
        if wait > 0:
            clock.now += min(wait, max(learner_next - clock.now, 0.001)) if with_learner else wait
            continue
        shares.charge("flood", cost)
        clock.now += cost
        busy += cost
    return busy / clock.now


def test_one_clients_many_pages_take_at_most_an_equal_part_of_the_loop_beside_another_client():
    """One client's 50 pages pressing New seed every 0.2 s took the whole loop: each page's events were paced alone,
    at half the loop each. Now a client's events and runs together take at most an equal part: half, beside one
    other client."""
    assert 0.45 <= _flood_share(with_learner=True) <= 0.52


def test_a_client_alone_on_the_server_has_the_whole_loop():
    """A class behind one address (one client) is not held back when nobody else uses the server."""
    assert _flood_share(with_learner=False) > 0.99


def test_a_client_that_has_had_its_share_lets_another_clients_run_go_first(monkeypatch):
    """The queue of runs takes, in turn, the first client whose share of the loop lets it run now; a client waiting
    for its share keeps its place, and the queue comes back for it when its wait is over."""
    from services.pacing import ClientShares, client_of

    monkeypatch.setattr("services.train_queue.page_left", lambda doc: False, raising=False)
    clock = Clock()
    shares = ClientShares(clock=clock)
    waits = []
    queue = TrainQueue(later=lambda delay, fn: waits.append((delay, fn)), shares=shares)
    log = []
    many = [(Doc("10.0.0.66"), Page(log, f"many{i}")) for i in range(2)]
    other = (Doc("10.0.0.7"), Page(log, "other"))
    shares.seen(client_of(other[0]))
    shares.seen(client_of(many[0][0]))
    shares.charge(client_of(many[0][0]), 1.0)  # the flood's pages have had far more than their half lately
    for doc, page in many:
        queue.submit(doc, page.compute)
    delay, fn = waits.pop(0)
    fn()
    assert log == [] and waits and waits[-1][0] > 0  # nothing taken: the queue waits for the flood's share
    queue.submit(other[0], other[1].compute)  # another client: taken at once
    assert waits[-1][0] == 0
    waits.pop()[1]()
    other[0].ticks.pop(0)()
    assert log == ["other"]
    clock.now += 10  # the flood's wait is over
    _drain(queue, waits, [d for d, _ in many])
    assert log == ["other", "many0", "many1"]
