"""The served page's websocket sends without Nagle's delay, under both ways of serving the app."""

from __future__ import annotations

import asyncio
import inspect
import logging
import socket
import time
import traceback
from contextlib import contextmanager
from pathlib import Path

import panel as pn
import pytest
from bokeh.models import Div
from panel.io.server import get_server

from app import create_app
from server.transport import session_websockets, set_websocket_nodelay
from testing.protocol_client import Learner

ROOT = Path(__file__).resolve().parents[1]


#: Each time a plain page's onload callbacks have run (where the app's own would set TCP_NODELAY).
PLAIN_LOADED: list[bool] = []


def _plain_page():
    pn.state.onload(lambda: PLAIN_LOADED.append(True))
    return pn.pane.Bokeh(Div(name="readout", text="plain"))


async def _served_nodelay(app, ready=lambda flags: flags and all(flags)) -> list[int]:
    """Serve ``app`` on loopback, open one session as a browser does, return TCP_NODELAY of its websockets once
    ``ready(flags)`` (by default: all set)."""
    server = get_server(app, port=0, address="127.0.0.1", start=False, show=False,
                        allow_websocket_origin=["127.0.0.1"])
    server.start()
    learner = Learner(f"ws://127.0.0.1:{server.port}/ws", figure="readout")
    try:
        await learner.connect()  # pulls the document and announces document_ready, as the browser does
        deadline = time.monotonic() + 60  # onload callbacks run on the server's loop after document_ready
        while True:
            await asyncio.sleep(0.02)
            sessions = server.get_sessions()
            flags = [ws.ws_connection.stream.socket.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
                     for s in sessions for ws in session_websockets(s.document)]
            if ready(flags) or time.monotonic() > deadline:
                return flags
    finally:
        learner.close()
        server.stop()


@pytest.mark.parametrize("app", [create_app, str(ROOT / "app.py")], ids=["python app.py", "panel serve app.py"])
def test_served_websocket_has_nodelay(app):
    flags = asyncio.run(_served_nodelay(app))
    assert len(flags) == 1 and flags[0] != 0


def test_bokeh_alone_leaves_nagle_on():
    # the reason transport.py exists: without it the same check reads 0, once the page's onload callbacks have run
    PLAIN_LOADED.clear()
    flags = asyncio.run(_served_nodelay(_plain_page, ready=lambda flags: flags and PLAIN_LOADED))
    assert PLAIN_LOADED and flags == [0]


def test_not_served_is_a_no_op():
    assert session_websockets(None) == [] and set_websocket_nodelay(pn.state.curdoc) == 0


def test_sessions_run_on_the_event_loop_once_the_server_says_so():
    """server/serve.py makes Bokeh run each session's work inline instead of in worker threads."""
    import asyncio
    import threading

    from bokeh.server import session

    from server.patches.bokeh_session_executor import install as run_sessions_on_the_loop

    # the names this relies on: if Bokeh moves them, this fails before anything else does
    assert callable(session._run_in_executor) and callable(session.ServerSession._run_in_executor)
    before, before_method = session._run_in_executor, session.ServerSession._run_in_executor
    try:
        run_sessions_on_the_loop()
        threads = []
        asyncio.run(session._run_in_executor(lambda: threads.append(threading.current_thread())))
        assert threads == [threading.main_thread()]
    finally:
        session._run_in_executor, session.ServerSession._run_in_executor = before, before_method



def test_a_pages_events_are_processed_in_a_hold_once_the_server_says_so():
    """server/serve.py wraps Panel's processing of a page's events in a hold; the names it relies on are Panel's."""
    from panel.io.document import hold  # noqa: F401  (what the wrapper holds with)

    from server.patches.panel_syncable_events import hold_page_events

    _wraps_panels_handlers_once(hold_page_events, "holds_document")


@contextmanager
def _panels_own_handlers():
    """Within the block, Panel's two handlers of a page's events are Panel's own, unwrapped (app.py served in this
    process, as in test_served_websocket_has_nodelay, has wrapped them already); yields them by name, and puts
    back what was there before."""
    from panel.reactive import Syncable

    from server.patches.panel_syncable_events import PAGE_EVENT_HANDLERS

    before = {name: getattr(Syncable, name) for name in PAGE_EVENT_HANDLERS}
    panels = {name: inspect.unwrap(method) for name, method in before.items()}
    try:
        for name, original in panels.items():
            setattr(Syncable, name, original)
        yield panels
    finally:
        for name, original in before.items():
            setattr(Syncable, name, original)


def _wraps_panels_handlers_once(install, flag: str) -> None:
    """``install()`` twice wraps each of Panel's two handlers of a page's events once, marked ``flag``."""
    from panel.reactive import Syncable

    with _panels_own_handlers() as panels:
        install()
        install()  # idempotent
        for name, original in panels.items():
            now = getattr(Syncable, name)
            assert getattr(now, flag) and now.__wrapped__ is original


def test_a_pages_patch_keeps_only_what_a_page_writes():
    from server.guard import PAGE_WRITE_BYTES, screen_page_patch

    def changed(attr, new, model="p1"):
        return {"kind": "ModelChanged", "model": {"id": model}, "attr": attr, "new": new}

    # a click as BokehJS sends it for a button the page made after the document: the button written out in full
    click = {"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": {
        "type": "event", "name": "button_click", "values": {"type": "map", "entries": [["model", {
            "type": "object", "name": "panel.models.widgets.Button", "id": "p7", "attributes": {}}]]}}}
    content = {"events": [changed("value", "0.5"), changed("name", "x" * 100), changed("tags", ["a"]), click,
                          changed("data", {"type": "map", "entries": [["x", [{"type": "number", "value": "nan"}]]]})]}
    assert screen_page_patch(content, 2000, known=lambda i: i == "p7") == (None, {"name", "tags"})
    assert [e.get("attr") for e in content["events"]] == ["value", None, "data"]
    # the same click naming a model the document does not have: Bokeh would make it
    assert screen_page_patch({"events": [click]}, 500)[0] == "a new model, which no page sends"
    for event in ({"kind": "RootAdded", "model": {"id": "p1"}}, {"kind": "ColumnsStreamed", "model": {"id": "p1"}},
                  {"kind": "TitleChanged", "title": "x"}):
        assert screen_page_patch({"events": [event]}, 100)[0].startswith("a patch event no page sends"), event
    array = {"type": "ndarray", "array": {"type": "bytes", "data": "H4sI"}, "shape": [1], "dtype": "float64"}
    assert "which no page sends" in screen_page_patch({"events": [changed("data", array)]}, 200)[0]
    big = changed("value", "1" * PAGE_WRITE_BYTES)
    assert screen_page_patch({"events": [big]}, PAGE_WRITE_BYTES + 100)[0].startswith("a write of more than")
    assert screen_page_patch({"events": [changed("value", "1" * 100)]}, PAGE_WRITE_BYTES + 100)[0] is None


def _document(*models):
    from bokeh.document import Document
    from bokeh.models import Column

    doc = Document()
    doc.add_root(Column(children=list(models)))
    return doc


def test_a_message_with_more_events_than_a_page_sends_is_refused():
    from server.guard import PAGE_MESSAGE_EVENTS, screen_page_patch

    click = {"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": {
        "type": "event", "name": "button_click", "values": {"type": "map", "entries": [["model", {"id": "p1"}]]}}}
    # a figure's four sizes at once: the most a page of this app sends in one message
    sizes = [{"kind": "ModelChanged", "model": {"id": "p1"}, "attr": a, "new": 300}
             for a in ("inner_width", "inner_height", "outer_width", "outer_height")]
    assert PAGE_MESSAGE_EVENTS >= 4 and screen_page_patch({"events": sizes}, 500)[0] is None
    why, _ = screen_page_patch({"events": [click] * 300}, 359)
    assert why == f"a message of 300 events (a page sends at most {PAGE_MESSAGE_EVENTS})"
    assert screen_page_patch({"events": [click] * (PAGE_MESSAGE_EVENTS + 1)}, 900)[0] is not None
    assert screen_page_patch({"events": "no list"}, 30)[0] == "a patch without a list of events"


def test_a_model_of_the_document_written_out_in_full_is_read_as_its_reference():
    from server.guard import screen_page_patch

    button = {"type": "object", "name": "panel.models.widgets.Button", "id": "p7", "attributes": {"label": "x"}}
    content = {"events": [{"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": {
        "type": "event", "name": "button_click", "values": {"type": "map", "entries": [["model", button]]}}}]}
    assert screen_page_patch(content, 300, known=lambda i: i == "p7") == (None, set())
    # Bokeh warns "reference already known" for a known model written out in full, on every click (warnings always on)
    assert content["events"][0]["msg_data"]["values"]["entries"] == [["model", {"id": "p7"}]]


def test_what_bokeh_could_not_apply_is_found_before_anything_is_applied():
    """Bokeh finds a value of the wrong type only while it applies the message, after the events before it, and logs
    the whole message three times; a property the model does not have, once a write."""
    from bokeh.models import Button, CheckboxGroup, Div

    from server.guard import check_page_events

    choice, div, button = CheckboxGroup(labels=["a", "b"]), Div(text="t"), Button(label="b")
    doc = _document(choice, div, button)

    def write(model, attr, new):
        return {"kind": "ModelChanged", "model": {"id": model.id}, "attr": attr, "new": new}

    good = write(choice, "active", [1])
    click = {"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": {
        "type": "event", "name": "button_click", "values": {"type": "map", "entries": [["model", {"id": button.id}]]}}}
    assert check_page_events([good, click, write(div, "text", "new")], doc) is None
    wrong = check_page_events([good, write(choice, "active", "x" * 15000)], doc)
    # nothing applied, no value quoted
    assert wrong == "a value CheckboxGroup.active cannot hold" and choice.active == []
    assert check_page_events([write(div, "value", "1")], doc) == "a write to Div.value, which it does not have"
    assert check_page_events([write(div, "text", ["a", "list"])], doc) == "a value Div.text cannot hold"
    assert check_page_events([{**good, "model": {"id": "p-none"}}], doc) == "a model the document does not have"
    junk = {**click, "msg_data": {"type": "event", "name": "no such event", "values": {}}}
    assert check_page_events([junk], doc) == "a patch Bokeh cannot read (DeserializationError)"
    assert check_page_events([{**click, "msg_data": "text"}], doc) == "a message no page sends"
    # a write to a model the server has just removed (a tab's contents shown no more): Bokeh drops it, as before
    doc.roots[0].children = [choice, button]
    assert check_page_events([write(div, "text", "late")], doc) is None


def test_a_tab_a_choice_or_a_position_a_control_does_not_offer_is_found_for_dropping():
    """Bokeh checks a written value's type only, and Panel then looked a tab or a choice up past the end (a traceback
    in the log each time, the connection kept) or took -1 as the last. Each such write is named, for the guard to
    drop it and say so once; a page's own values are not."""
    from bokeh.models import CheckboxGroup, RadioButtonGroup, Select, Slider, TabPanel, Tabs

    from server.guard import check_page_events

    choice, radio = CheckboxGroup(labels=["a", "b"]), RadioButtonGroup(labels=["1", "2", "3"])
    tabs = Tabs(tabs=[TabPanel(child=Div(), title="one"), TabPanel(child=Div(), title="two")])
    slider, menu = Slider(start=0, end=13, value=7, step=1), Select(options=["Section 6", ("m2", "Module 2")])
    doc = _document(choice, radio, tabs, slider, menu)

    def unoffered(model, attr, new):
        found = []
        assert check_page_events([{"kind": "ModelChanged", "model": {"id": model.id}, "attr": attr, "new": new}], doc,
                                 found) is None
        return [name for _, name in found]

    for model, attr, good, bad in [
            (choice, "active", [[], [0, 1]], [[2], [-1], [0, 5]]),
            (radio, "active", [0, 2, None], [3, -1]),
            (tabs, "active", [0, 1], [2, -1, 99]),
            (slider, "value", [0, 7, 13, 6.5], [14, -1, 1e300, {"type": "number", "value": "nan"}]),
            (slider, "value_throttled", [13], [99]),
            (menu, "value", ["Section 6", "m2"], ["xx", "Module 2"])]:
        name = f"{type(model).__name__}.{attr}"
        assert [unoffered(model, attr, v) for v in good] == [[]] * len(good), name
        assert [unoffered(model, attr, v) for v in bad] == [[name]] * len(bad), name
    # each found by its place in the message, the others kept
    found = []
    events = [{"kind": "ModelChanged", "model": {"id": tabs.id}, "attr": "active", "new": v} for v in (1, 99, 0)]
    assert check_page_events(events, doc, found) is None and found == [(1, "Tabs.active")]


def test_the_guard_reads_pages_as_bokeh_does():
    """server/patches/bokeh_deserializer.py replaces two of Bokeh's Deserializer methods and
    server/patches/panel_syncable_events.py wraps two of Panel's: if they move, this fails."""
    from bokeh.core.serialization import Deserializer

    from server.patches.panel_syncable_events import pace_page_events

    assert callable(Deserializer._decode_ref) and callable(Deserializer._decode_object_ref)
    _wraps_panels_handlers_once(pace_page_events, "paced")


def test_every_log_line_is_bounded_whichever_logger_writes_it(capsys):
    """A filter on ``bokeh.server`` did not see the records of its child loggers, where Bokeh logs what a page sent:
    three copies of a 15 kB value, and its traceback, for each write."""
    import logging

    from server.logs import MAX_LOG_CHARS, install_log_redaction

    before = logging.getLogRecordFactory()
    handler = logging.StreamHandler()  # the server's handler, on a parent of the logger that writes
    parent, logger = logging.getLogger("bokeh"), logging.getLogger("bokeh.server.protocol_handler")
    parent.addHandler(handler)
    try:
        install_log_redaction()
        install_log_redaction()  # idempotent
        value = "x" * 15000
        try:
            raise ValueError(f"failed to validate CheckboxGroup.active: expected a list, got {value!r}")
        except ValueError as e:
            logger.error("error handling message\n message: %r \n error: %r", {"new": value}, e, exc_info=True)
        logger.warning("Refused websocket from /app/ws?room=K7M4QX&token=s3cr-et_: a message")
    finally:
        logging.setLogRecordFactory(before)
        parent.removeHandler(handler)
    written = capsys.readouterr().err
    assert len(written) < 6_000, len(written)  # 45 kB before
    assert "(30132 characters in all)" in written and "room=…&token=…" in written and "s3cr" not in written
    assert all(len(line) < MAX_LOG_CHARS + 40 for line in written.splitlines())
    assert "ValueError: failed to validate" in written  # the traceback's end, the error, is kept


class _Kept(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record)


async def _fail_in(depth: int) -> None:
    # two functions calling each other: Python writes a frame repeated on end as one line
    if depth:
        await _fail_via(depth - 1)
    raise ValueError("a temperature of 1e400 is past a float's range")


async def _fail_via(depth: int) -> None:
    await _fail_in(depth)


def test_a_traceback_logged_as_a_message_keeps_its_error_line_within_the_bound():
    """Bokeh logs a failed callback's traceback as the message itself (``bokeh.util.asyncio``: "Error thrown from
    callback:", then the formatted traceback as a record of its own): cut to its start, the record lost its last
    line, the error."""
    from bokeh.util.asyncio import _log_task_exception  # what Bokeh calls when a session's async callback fails

    from server.logs import MAX_LOG_CHARS, install_log_redaction

    async def failed():
        task = asyncio.ensure_future(_fail_in(12))
        await asyncio.wait([task])
        return task

    task = asyncio.run(failed())
    before, kept = logging.getLogRecordFactory(), _Kept()
    logger = logging.getLogger("bokeh.util.asyncio")
    logger.addHandler(kept)
    try:
        install_log_redaction()
        _log_task_exception(task)
    finally:
        logging.setLogRecordFactory(before)
        logger.removeHandler(kept)
    whole = "".join(traceback.format_exception(task.exception()))
    assert len(whole) > 2 * MAX_LOG_CHARS  # a traceback longer than a message may be
    message = kept.records[-1].getMessage()
    assert len(message) <= MAX_LOG_CHARS + 40, len(message)
    assert message.startswith("Traceback (most recent call last):\n")
    assert f"({len(whole)} characters in all)" in message
    assert message.splitlines()[-1] == "ValueError: a temperature of 1e400 is past a float's range"
    assert message.splitlines()[-2:] == whole.splitlines()[-2:]  # the innermost frame's code line, and the error


def test_a_message_the_browser_bridge_cannot_use_is_ignored_and_said_once(caplog):
    from link.browser import BrowserBridge
    from session.state import AttentionState

    state = AttentionState()
    bridge = BrowserBridge(state=state)
    for msg in ({"lang": {}}, {"key": []}, {"key": "1", "x": 1}, {"stored": 5}, ["key"], "1", {}, {1: 2}):
        bridge._handle_msg(msg)  # {"lang": {}} raised TypeError (unhashable) and Bokeh logged its traceback
    assert state.selected == 1 and state.lang == "en"
    ignored = [r for r in caplog.records if "never sends" in r.getMessage()]
    assert len(ignored) == 1 and "dict(lang: dict)" in ignored[0].getMessage()
    bridge._handle_msg({"key": "1", "shift": False, "in_plot": False})  # what the page sends: taken
    assert state.selected == 0


def test_a_page_event_that_changes_several_layouts_walks_the_document_once():
    """Bokeh finds a document's models by walking all of it, after every change of a layout's children unless the
    document is frozen; with every tab built, those walks were most of a costly click's time. Within the hold
    of ``server/patches/panel_syncable_events.py`` (``server/patches/bokeh_model_walks.py``): one walk, at the
    event's end, and none for an event that changed no layout."""
    from bokeh.document import Document
    from bokeh.events import ButtonClick

    from server.patches.panel_syncable_events import hold_page_events

    with _panels_own_handlers():
        hold_page_events()
        left, right = pn.Column(pn.pane.HTML("a")), pn.Column(pn.pane.HTML("b"))
        button = pn.widgets.Button(label="Rebuild")

        def rebuild(_):
            left.objects = [pn.pane.HTML("c"), pn.pane.HTML("d")]
            right.objects = [pn.pane.HTML("e")]
        button.on_click(rebuild)
        text = pn.widgets.Button(label="Text")
        text.on_click(lambda _: setattr(left[0], "object", "f"))
        doc = Document()
        root = pn.Column(button, text, left, right).get_root(doc)
        doc.add_root(root)
        walks = []
        recompute = doc.models.recompute
        doc.models.recompute = lambda: (walks.append(1), recompute())[1]
        model = button._models[root.ref["id"]][0]
        button._process_bokeh_event(doc, ButtonClick(model))
        assert button.clicks == 1 and [o.object for o in left] == ["c", "d"]
        assert len(walks) == 1
        # a click that changes only text walks nothing (Bokeh's own freeze would walk once at its end)
        walks.clear()
        text._process_bokeh_event(doc, ButtonClick(text._models[root.ref["id"]][0]))
        assert left[0].object == "f" and walks == []
        # the new panes are the document's, as without the freeze
        assert all(doc.get_model_by_id(m.id) is m for m in left._models[root.ref["id"]][0].children)


def test_panel_looks_for_links_after_a_layout_change_only_while_one_is_registered(monkeypatch):
    """From the first Panel link the process made, Panel's hook walked a page for links after each change of any of
    its layouts (each Panel object, each Bokeh model under the change), with no link left: a good part of a tab's
    first showing (bench/HISTORY.md). After ``server/patches/panel_link_callbacks.py``, no walk while no
    link is registered, and Panel's own behaviour while one is: the link's callback reaches the page."""
    from bokeh.document import Document
    from panel.links import Callback
    from panel.viewable import Viewable

    from server.patches.panel_link_callbacks import install as skip_link_walks_without_links

    # Panel's hook, watched, as Panel installs it at the first link made; other tests' links, if any, left aside
    walks, hook = [], Callback._process_callbacks.__func__

    def process_callbacks(cls, root_view, root_model, changed=None, old_models=None):
        walks.append(changed)
        return hook(cls, root_view, root_model, changed, old_models)

    monkeypatch.setattr(Callback, "_process_callbacks", classmethod(process_callbacks))
    monkeypatch.setattr(Callback, "registry", type(Callback.registry)())
    monkeypatch.setattr(Viewable, "_preprocessing_hooks",
                        [h for h in Viewable._preprocessing_hooks if getattr(h, "__self__", None) is not Callback])
    slider, text = pn.widgets.IntSlider(), pn.widgets.StaticText()
    slider.jslink(text, value="value").unwatch()  # Panel's hook is installed, and no link is left in its registry
    skip_link_walks_without_links()
    skip_link_walks_without_links()  # idempotent
    assert Callback._process_callbacks.__func__.only_with_links
    assert Callback._process_callbacks in Viewable._preprocessing_hooks
    left = pn.Column(pn.pane.HTML("a"))
    page = pn.Column(left, slider, text)
    doc = page.server_doc(Document())  # a page Panel keeps as a view: it runs its hooks after its layouts change
    root = doc.roots[0]
    walks.clear()
    left.objects = [pn.pane.HTML("b")]
    assert walks == [] and left._models[root.ref["id"]][0].children[0].text.endswith("b")
    link = slider.jslink(text, value="value")  # a link registered: Panel looks for it, and its callback is added
    left.objects = [pn.pane.HTML("c")]
    model = slider._models[root.ref["id"]][0]
    assert walks == [left] and any(id(link) in cb.tags[0] for cb in model.js_property_callbacks["change:value"])
    page._cleanup(root)


def test_a_page_message_after_its_session_ended_is_dropped_without_a_traceback():
    """A server stopping lets its sessions go while a page's events may wait their turn in the guard; Bokeh's handler
    then asserted there was a session and logged a traceback for the click. Now nothing is handled."""
    from types import SimpleNamespace

    from server.guard import GuardedWSHandler

    handled = []

    async def handle(parsed):
        handled.append(parsed)

    guard = object.__new__(GuardedWSHandler)
    guard.connection, guard._handle = SimpleNamespace(_session=None), handle
    parsed = SimpleNamespace(content={"events": [{"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": {}}]})
    assert asyncio.run(guard._patch(parsed, 100)) is None and handled == []


def test_the_server_sends_no_ok_for_a_pages_patch_and_still_answers_what_a_page_waits_for():
    """BokehJS sends a page's patches without asking for a reply and drops Bokeh's OK to them (bokeh.js,
    ``ClientSession._handle_ok``): three frames for each drag position, for nothing (server/guard.py). A reply a page
    waits for (its server info, its document) is sent as before."""
    from types import SimpleNamespace

    from bokeh.protocol import Protocol

    from server.guard import GuardedWSHandler

    protocol, sent = Protocol(), []
    incoming = {"a position": SimpleNamespace(msgtype="PATCH-DOC"), "info?": SimpleNamespace(msgtype="SERVER-INFO-REQ")}

    async def receive(message):
        return incoming[message]

    async def patch(parsed, size):
        return protocol.create("OK", "the-patch")

    async def handle(parsed):
        return protocol.create("SERVER-INFO-REPLY", "the-request")

    async def schedule(work):
        sent.append(work.msgtype)

    guard = object.__new__(GuardedWSHandler)
    guard._receive, guard._patch, guard._handle, guard._schedule = receive, patch, handle, schedule
    for message in ("a position", "info?", "a position"):
        asyncio.run(guard.on_message(message))
    assert sent == ["SERVER-INFO-REPLY"] and not guard._refused


def test_a_pages_messages_hold_back_early_builds_and_a_person_s_keep_builds_to_their_share(monkeypatch):
    """The build gate may start a build before its share allows only while nobody uses a page
    (server/build_gate.py): the guard tells it which messages are being handled, and which are a person's (the
    page's first messages, as its script loads it, are not)."""
    import time
    from types import SimpleNamespace

    from server.build_gate import CACHE_KEY, BuildGate
    from server.guard import GuardedWSHandler

    now = [100.0]
    gate = BuildGate(clock=lambda: now[0])
    monkeypatch.setitem(pn.state.cache, CACHE_KEY, gate)
    monkeypatch.setattr(time, "perf_counter", lambda: now[0])
    seen = []

    async def receive(message):
        return SimpleNamespace(msgtype="SERVER-INFO-REQ")

    async def handle(parsed):
        seen.append(gate.messages)

    guard = object.__new__(GuardedWSHandler)
    guard._receive, guard._handle = receive, handle
    asyncio.run(guard.on_message("the page's first message"))
    now[0] += BuildGate.IN_USE_AFTER / 2
    asyncio.run(guard.on_message("its script's next"))
    assert seen == [1, 1] and gate.messages == 0 and gate.used_at == -float("inf")
    now[0] += BuildGate.IN_USE_AFTER
    asyncio.run(guard.on_message("a person's key"))
    assert gate.used_at == now[0]


def test_the_guard_writes_a_messages_frames_all_at_once_as_bokeh_frames_them():
    """Bokeh writes a message's frames one at a time, each waited for before the next: two turns of the loop a
    frame, and a run of the Train tab (17 frames) waited some 35 turns to leave while one client's 50 pages pressed
    New seed (bench/RESULTS.md, issue 45). The guard writes them all before it waits, in the order and form Bokeh's
    own ``Message.send`` writes them."""
    from types import SimpleNamespace

    from bokeh.core.serialization import Buffer
    from bokeh.protocol import Protocol
    from tornado.locks import Lock

    from server.guard import GuardedWSHandler

    message = Protocol().create("OK", "a-request")
    message.add_buffer(Buffer("b1", b"\x00\x01\x02"))
    message.add_buffer(Buffer("b2", memoryview(b"\x03\x04")))

    async def bokeh_frames() -> list:
        written = []

        async def write_message(frame, binary=False, locked=True):
            written.append((frame, binary))
        await message.send(SimpleNamespace(write_lock=Lock(), write_message=write_message))
        return written

    async def guard_frames() -> tuple[list, list]:
        written, pending = [], []

        def write_message(frame, binary=False):
            written.append((frame, binary))
            pending.append(asyncio.get_running_loop().create_future())
            return pending[-1]

        guard = object.__new__(GuardedWSHandler)
        guard.write_lock = Lock()
        guard.ws_connection = SimpleNamespace(is_closing=lambda: False, stream=None, write_message=write_message)
        sending = asyncio.ensure_future(guard.send_message(message))
        await asyncio.sleep(0)  # one turn: Bokeh's own send has written its first frame and waits for it
        before_any_done = list(written)
        for _ in range(100):  # the socket takes each frame as it comes (Bokeh's send waits for each in turn)
            for future in pending:
                if not future.done():
                    future.set_result(None)
            if sending.done():
                break
            await asyncio.sleep(0)
        await sending
        return before_any_done, written

    expected = asyncio.run(bokeh_frames())
    before_any_done, written = asyncio.run(guard_frames())
    assert len(expected) == 3 + 2 * 2
    assert written == expected and before_any_done == expected


def test_a_connection_bokehs_keep_alive_let_go_first_closes_as_any_other(monkeypatch):
    """Bokeh's keep-alive pings every connection and lets go of one whose stream has closed (``client_lost``: its
    session detached) before Tornado says it closed, which it does only once the guard has let go of the message it
    was holding back. Bokeh's own ``on_close`` then asserted the connection still had a session: a traceback for a
    page that had simply left, and the page's leaving (its queued events dropped) never told. Now it closes as any
    other: once, and the page's session hears it has left."""
    import weakref
    from types import SimpleNamespace

    from bokeh.server.connection import ServerConnection

    import server.guard
    from server.guard import GuardedWSHandler

    class Session:
        connection_count = 0
        _document = SimpleNamespace(session_context=None)

    session, left, lost = Session(), [], []
    monkeypatch.setattr(server.guard, "page_has_left", left.append)
    connection = object.__new__(ServerConnection)
    connection._session = None  # what the keep-alive's client_lost leaves (bokeh/server/connection.py detach_session)
    guard = object.__new__(GuardedWSHandler)
    guard.connection, guard.handler, guard.receiver = connection, None, None
    guard.close_code = guard.close_reason = None
    guard.application = SimpleNamespace(client_lost=lost.append)
    guard._page_session = weakref.ref(session)
    guard.on_close()
    assert guard.connection is None and left == [session._document] and lost == []


def test_a_pages_scheduled_update_runs_as_bokeh_runs_a_documents_callback():
    """A page's paced update (services/pace.py, ``run_later``: a drag's next position, a session's queued event) runs
    as Bokeh runs a document's timeout callback: later, on the loop, with the page's document current (Bokeh's and
    Panel's) and the session's document lock held, so that what it changes reaches the page; and not at all once the
    session has ended."""
    from bokeh.io import curdoc

    from services.pace import run_later

    ran, scheduled = [], []

    def page():
        def update(label):
            doc = pn.state.curdoc
            session = doc.session_context._session
            ran.append((label, curdoc() is doc, pn.state.curdoc is doc, session._lock.locked()))

        def schedule():
            doc = pn.state.curdoc
            scheduled.append(doc)
            run_later(doc, lambda: update("next turn"), 0)
            run_later(doc, lambda: update("5 ms later"), 0.005)

        pn.state.onload(schedule)
        return pn.pane.Bokeh(Div(name="readout", text="plain"))

    async def scenario():
        server = get_server(page, port=0, address="127.0.0.1", start=False, show=False,
                            allow_websocket_origin=["127.0.0.1"])
        server.start()
        learner = Learner(f"ws://127.0.0.1:{server.port}/ws", figure="readout")
        try:
            await learner.connect()
            deadline = time.monotonic() + 60
            while len(ran) < 2 and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            # an update still waiting when the page's session ends is dropped: the loop's own timer after it says when
            # it would have run
            doc = scheduled[0]
            run_later(doc, lambda: ran.append(("after the end",)), 0.001)
            for session in server.get_sessions():
                session.destroy()
            after = asyncio.Event()
            asyncio.get_running_loop().call_later(0.05, after.set)
            await after.wait()
        finally:
            learner.close()
            server.stop()

    from bokeh.server import session

    from server.patches.bokeh_session_executor import install as run_sessions_on_the_loop

    before, before_method = session._run_in_executor, session.ServerSession._run_in_executor
    try:
        run_sessions_on_the_loop()  # as the app is served (server/serve.py): a page's work on the loop
        asyncio.run(scenario())
    finally:
        session._run_in_executor, session.ServerSession._run_in_executor = before, before_method
    assert ran == [("next turn", True, True, True), ("5 ms later", True, True, True)]


def test_a_write_its_model_reads_itself_is_handed_over_as_read_and_checked_and_bokeh_sets_nothing():
    """A drag's position (link/channel.py) is read once by the server and never again: the guard, which reads and
    checks a page's write before Bokeh does, hands it to the channel's reader as read (services/direct_writes.py),
    under the session's document lock with the page's document current, and Bokeh neither reads it again nor sets
    the property. A write to any other model, or a patch of several events, is Bokeh's to apply, as before."""
    from types import SimpleNamespace

    from bokeh.document import Document
    from bokeh.io import curdoc

    from link.row import OneRow
    from server.guard import GuardedWSHandler
    from services.direct_writes import read_directly
    from testing.protocol_client import _map, changed

    channel, other = OneRow(data=dict(x=[0.0], seq=[0])), OneRow(data=dict(x=[0.0], seq=[0]))
    doc = Document()
    doc.add_root(channel)
    doc.add_root(other)
    read, changes, applied, locks = [], [], [], []
    read_directly(channel, "data", lambda new: read.append((new, curdoc() is doc, bool(locks))))
    for row in (channel, other):
        row.on_change("data", lambda attr, old, new: changes.append(new))

    async def with_document_locked(func, *args):
        locks.append(True)
        try:
            return func(*args)
        finally:
            locks.pop()

    async def handle(parsed):  # Bokeh's own handling of what the guard passes on: apply the patch
        applied.append([e["model"]["id"] for e in parsed.content["events"]])
        doc.apply_json_patch(parsed.content)

    guard = object.__new__(GuardedWSHandler)
    session = SimpleNamespace(document=doc, with_document_locked=with_document_locked)
    guard.connection = SimpleNamespace(_session=session)
    guard.request = SimpleNamespace(remote_ip="127.0.0.1")
    guard._handle = handle

    def patch(*events):
        return asyncio.run(guard._patch(SimpleNamespace(content={"events": list(events)}), 200))

    patch(changed(channel.id, "data", _map(x=[0.5], seq=[1])))
    assert read == [({"x": [0.5], "seq": [1]}, True, True)]
    assert channel.data == {"x": [0.0], "seq": [0]} and changes == [] and applied == []
    patch(changed(other.id, "data", _map(x=[0.25], seq=[1])))
    assert applied == [[other.id]] and other.data == {"x": [0.25], "seq": [1]} and len(read) == 1
    patch(changed(channel.id, "data", _map(x=[0.75], seq=[2])), changed(other.id, "data", _map(x=[1.0], seq=[2])))
    assert applied[-1] == [channel.id, other.id]
    assert changes[-2:] == [{"x": [0.75], "seq": [2]}, {"x": [1.0], "seq": [2]}]
    assert len(read) == 1
    assert not guard._refused
