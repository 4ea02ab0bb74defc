"""Rooms: the registry's codes, tokens and expiry, and the page's end of a room without a server."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys

import numpy as np
import param
import pytest

from link.row import OneRow
from server.logs import RedactLogLines
from services.network import class_address
from services.rooms import (
    ALPHABET,
    CODE_LENGTH,
    SECRET_ENV,
    CodesNotReady,
    RoomError,
    RoomRegistry,
    RoomSecret,
    end_after_from_env,
    normalize_code,
    seconds_from_env,
)
from session.state import AttentionState
from widgets.room import UNAVAILABLE, RoomControls
from widgets.room_view import qr_svg


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def registry(clock):
    return RoomRegistry(end_after=120, clock=clock)


def test_codes_are_short_readable_and_unique(registry):
    codes = {registry.create()[0].code for _ in range(500)}
    assert len(codes) == 500
    for code in codes:
        assert re.fullmatch(f"[{ALPHABET}]{{{CODE_LENGTH}}}", code)
        assert not set(code) & set("0O1IL")


def test_tokens_are_unguessable_and_not_the_code(registry):
    (room_a, token_a), (_, token_b) = registry.create(), registry.create()
    assert token_a != token_b and len(token_a) >= 32
    assert room_a.code not in token_a
    assert token_a not in repr(room_a)  # the room keeps only a digest


def test_typed_codes_are_forgiving_but_strict():
    assert normalize_code("k7m-4qx") == "K7M4QX"
    assert normalize_code("K7M 4QX") == "K7M4QX"
    for bad in (None, "", "K7M4Q", "K7M4QXX", "K7M4Q0", "<b>x</b>"):
        assert normalize_code(bad) is None


def test_publishing_needs_the_presenter_token(registry):
    room, token = registry.create({"query": (0.0, 1.0)})
    for wrong in (None, "", token[:-1] + ("A" if token[-1] != "A" else "B")):
        with pytest.raises(RoomError):
            registry.publish(room.code, wrong, {"query": (9.0, 9.0)})
    assert room.snapshot == {"query": (0.0, 1.0)} and room.version == 0
    assert registry.publish(room.code, token, {"query": (1.0, 1.0)}) == 1
    assert room.snapshot == {"query": (1.0, 1.0)}


def test_entering_as_presenter_needs_the_token(registry):
    room, token = registry.create()
    with pytest.raises(RoomError):
        registry.enter_as_presenter(room.code, None, "s1")
    with pytest.raises(RoomError):
        registry.enter_as_presenter(room.code, "not-the-token", "s1")
    assert registry.enter_as_presenter(room.code.lower(), token, "s1") is room
    assert room.presenter == "s1" and room.left_at is None


SECRET = "a school's secret, long enough to be one"


def test_a_presenter_link_routed_to_another_process_with_the_same_secret_opens_the_room_there():
    secret = RoomSecret.from_env({SECRET_ENV: SECRET})
    here, other = (RoomRegistry(end_after=120, clock=FakeClock(), secret=secret) for _ in range(2))
    room, token = other.create()
    opened = here.enter_as_presenter(room.code, token, "s1")
    assert here.get(room.code) is opened
    with pytest.raises(RoomError):
        here.enter_as_presenter(room.code, "someone-else", "s2")


def test_nobody_can_present_a_code_without_its_token(registry):
    """A forged token, a token for another code, a code one chose oneself: all refused, before and after."""
    room, token = registry.create()
    other, other_token = registry.create()
    forged = [None, "", "anything", "mine", token[:-1] + ("A" if token[-1] != "A" else "B"), token.upper(),
              other_token, token + "x", " " + token]
    for code in (room.code, "ABCDEF"):  # the class's room, and a code that was never opened
        for wrong in forged:
            with pytest.raises(RoomError):
                registry.enter_as_presenter(code, wrong, "intruder")
    assert registry.get("ABCDEF") is None and room.presenter is None
    for wrong in forged:
        with pytest.raises(RoomError):
            registry.publish(room.code, wrong, {"query": (9.0, 9.0)})
        registry.publish_hand(room.code, wrong, (9.0, 9.0))
    assert room.version == 0 and room.hand_at < 0
    assert registry.enter_as_presenter(room.code, token, "teacher") is room


def test_a_restart_keeps_presenter_links_only_with_the_secret():
    room, token = RoomRegistry(secret=RoomSecret.from_env({SECRET_ENV: SECRET})).create()
    # the same server started again with the same EXPLORER_ROOM_SECRET: the teacher's link resumes the room
    again = RoomRegistry(secret=RoomSecret.from_env({SECRET_ENV: SECRET}))
    assert again.enter_as_presenter(room.code, token, "teacher").code == room.code
    # without it, each start draws its own secret: the old link is refused, and the message says why
    unset = RoomRegistry(secret=RoomSecret.from_env({}))
    room, token = unset.create()
    restarted = RoomRegistry(secret=RoomSecret.from_env({}))
    with pytest.raises(RoomError, match="stop working when the server restarts"):
        restarted.enter_as_presenter(room.code, token, "teacher")
    # a configured secret does not blame a restart
    with pytest.raises(RoomError) as refused:
        again.enter_as_presenter(room.code, token, "teacher")
    assert "restart" not in str(refused.value)


def test_the_secret_is_long_or_refused_and_never_shown():
    with pytest.raises(ValueError, match=f"{SECRET_ENV} must be at least 32 characters"):
        RoomSecret.from_env({SECRET_ENV: "short"})
    secret = RoomSecret.from_env({SECRET_ENV: SECRET})
    assert secret.persistent and SECRET not in repr(secret) and not RoomSecret.from_env({}).persistent
    # an HMAC of the code: the same for every process with the secret, different for every code
    assert secret.token("K7M4QX") == RoomSecret.from_env({SECRET_ENV: SECRET}).token("K7M4QX")
    assert secret.token("K7M4QX") != secret.token("K7M4QY") != RoomSecret.from_env({SECRET_ENV: SECRET + "!"}).token(
        "K7M4QY")
    assert len(secret.token("K7M4QX")) == 43


def test_followers_get_every_change_and_the_end(registry):
    room, token = registry.create({"query": (0.0, 1.0)})
    seen = []
    registry.follow(room.code, "f1", lambda *offer: seen.append(offer))
    registry.publish(room.code, token, {"query": (1.0, 0.0)}, query_only=True)
    registry.publish(room.code, token, {"query": (1.0, 0.0), "selected": 0})
    registry.unfollow(room.code, "f2")  # unknown follower: nothing happens
    registry.end(room.code, token)
    assert seen == [(1, {"query": (1.0, 0.0)}, True), (2, {"query": (1.0, 0.0), "selected": 0}, False),
                    (None, None, False)]
    with pytest.raises(RoomError):
        registry.follow(room.code, "f3", lambda *offer: None)


class Sink:
    """A live channel's end, as server/room_live.py's handler is to the registry."""

    def __init__(self):
        self.texts, self.closed = [], False

    def send(self, text, replaceable):
        message = json.loads(text)
        assert replaceable == (message["query"] is not None)  # only a position may be replaced by a newer one
        self.texts.append(message)

    def close(self, code=None, reason=None):
        self.closed = code or True


async def until(condition, what: str, timeout: float = 30.0) -> None:
    """Let the event loop run until ``condition()`` holds (what the registry writes on the loop has been written),
    however long a loaded machine takes; fails after ``timeout`` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"never: {what}"
        await asyncio.sleep(0.01)


def channel(registry, code, key, sink):
    """Page ``key`` follows room ``code`` and opens its live channel ``sink`` with its ticket, as its script does."""
    registry.follow(code, key, lambda *offer: None)
    registry.watch(f"{code[:3].lower()}-{code[3:]}", registry.live_ticket(code, key), sink)  # typed as a learner might


def test_live_channels_get_each_view_once_written_for_the_whole_room(registry):
    async def scenario():
        room, token = registry.create({"query": (0.0, 1.0)})
        a, b, gone = Sink(), Sink(), Sink()
        for i, sink in enumerate((a, b, gone)):
            channel(registry, room.code, f"page-{i}", sink)
        registry.unwatch(room.code, gone)
        registry.publish(room.code, token, {"query": (0.5, 2.0)}, query_only=True)
        registry.publish(room.code, token, {"query": (1.0, 0.0), "selected": 0})
        # written on the event loop, never in the publisher's thread; every channel of a view in the same turn
        await until(lambda: len(a.texts) == 2 and len(b.texts) == 2, "both views written")
        registry.end(room.code, token)
        await until(lambda: a.closed and b.closed, "the channels closed with the room")
        with pytest.raises(RoomError):
            registry.watch(room.code, registry.live_ticket(room.code, "page-0"), Sink())  # ended
        with pytest.raises(RoomError):
            registry.watch("<script>", "ticket", Sink())
        return a, b, gone

    a, b, gone = asyncio.run(scenario())
    # a drag's view carries its query; any other view only says the page's server will send it
    assert a.texts == b.texts == [{"version": 1, "query": [0.5, 2.0]}, {"version": 2, "query": None}]
    assert a.closed and b.closed and gone.texts == [] and not gone.closed


def test_the_presenters_hand_reaches_live_channels_first_coalesced_to_one_text_a_frame(registry, clock):
    async def scenario():
        room, token = registry.create({"query": (0.0, 1.0)})
        sink = Sink()
        channel(registry, room.code, "page", sink)
        registry.publish_hand(room.code, "not-the-token", (2.0, 2.0))
        registry.publish_hand(room.code, token, (float("nan"), 0.0))
        for i in range(5):  # five moves within one frame: the first now, the newest one frame later
            registry.publish_hand(room.code, token, (0.1 * i, 1.0))
        await until(lambda: len(sink.texts) >= 2, "the hand's first and newest positions written")
        # the presenter's server then makes a position the hand has passed the room's view: not written
        registry.publish(room.code, token, {"query": (0.1, 1.0)}, query_only=True)
        clock.now += 1.0  # the hand rests: a view of another kind, or a later move by keyboard, is written
        registry.publish(room.code, token, {"query": (0.5, 0.5)}, query_only=True)
        # written in order on the loop: once the later view is in, the passed one would have come before it
        await until(lambda: {"version": 2, "query": [0.5, 0.5]} in sink.texts, "the later view written")
        return sink.texts

    assert asyncio.run(scenario()) == [
        {"version": 1, "query": [0.0, 1.0]},  # the next view's version: the page previews it as newer
        {"version": 1, "query": [0.4, 1.0]},
        {"version": 2, "query": [0.5, 0.5]},
    ]


def test_a_rooms_pages_take_a_view_in_full_one_at_a_time_skipping_closed_ones(registry):
    room, _ = registry.create()
    calls = []
    assert registry.begin_settle(room.code, lambda: calls.append("first") or True)
    assert not registry.begin_settle(room.code, lambda: calls.append("closed") or False)
    assert not registry.begin_settle(room.code, lambda: calls.append("second") or True)
    assert not registry.begin_settle(room.code, lambda: calls.append("third") or True)
    registry.end_settle(room.code)  # the closed page is skipped: the second page's turn
    assert calls == ["closed", "second"]
    assert registry.begin_settle(room.code, lambda: True)  # the second page, now running
    registry.end_settle(room.code)
    assert calls == ["closed", "second", "third"]


def test_a_follower_takes_a_drag_in_full_once_the_room_rests_one_page_at_a_time(registry, clock):
    presenter_state, follower_state = AttentionState(), AttentionState()
    presenter = RoomControls(state=presenter_state, registry=registry)
    presenter._on_present(None)
    follower = RoomControls(state=follower_state, registry=registry)
    follower._enter(presenter.code, None)
    presenter_state.move_query(0.5, 0.5)
    assert follower_state.query == (0.5, 0.5)  # not served: no live channel, every view in full
    assert follower._shown_version == registry.view(presenter.code)[0]
    # served, a drag reaches the page on the live channel; the server's numbers wait for the room to rest
    timeouts = []
    follower._doc = type("Doc", (), {"session_context": object(),
                                     "add_timeout_callback": lambda self, cb, ms: timeouts.append(ms),
                                     "add_next_tick_callback": lambda self, cb: timeouts.append("next tick")})()
    live = OneRow(data=dict(room=[""], version=[0], path=[""]))
    with param.edit_constant(follower):
        follower.live = live
    presenter_state.move_query(1.5, -0.5)
    presenter_state.move_query(1.0, -0.5)  # one settle check is armed for the drag, not one per move
    assert follower_state.query == (0.5, 0.5) and timeouts == [1000]
    clock.now += registry.settle_after / 2
    follower._settle()  # the room moved half a rest ago: look again when it has rested
    assert follower_state.query == (0.5, 0.5) and timeouts[-1] == 500
    clock.now += registry.settle_after
    turns = []
    assert registry.begin_settle(presenter.code, lambda: turns.append("other") or True)  # another page's turn
    follower._settle()  # this page waits for its turn
    assert follower_state.query == (0.5, 0.5) and turns == []
    registry.end_settle(presenter.code)  # the other page is done: this page's turn is scheduled ...
    assert follower_state.query == (0.5, 0.5) and timeouts[-1] == "next tick"
    follower._doc = None
    follower._settle()  # ... and runs
    assert follower_state.query == (1.0, -0.5)
    assert live.data == {"room": [presenter.code], "version": [registry.view(presenter.code)[0]],
                         "path": ["/room-live"], "ticket": [registry.live_ticket(presenter.code, follower._session)]}

def test_a_room_ends_end_after_seconds_after_its_presenter_left(registry, clock):
    room, token = registry.create()
    registry.enter_as_presenter(room.code, token, "s1")
    clock.now += 10_000
    assert registry.sweep() == []  # the presenter is still there
    registry.presenter_left(room.code, "s1")
    clock.now += 119
    assert registry.sweep() == []
    clock.now += 1
    assert registry.sweep() == [room.code]
    assert registry.get(room.code) is None and room.ended


def test_followers_are_told_when_the_presenter_has_gone_and_when_it_is_back(registry, clock):
    """A presenter's page that went away left the class following a room that said nothing until it ended, 5 minutes
    later; now its followers are told once it has been gone a few seconds (a reload is back sooner), and again when
    it is back, and keep the view they had."""
    from services.rooms import PRESENCE_GRACE

    presenter = RoomControls(state=AttentionState(), registry=registry)
    presenter._on_present(None)
    code, token = presenter.code, presenter._token
    presenter.state.move_query(0.5, 1.5)
    follower = RoomControls(state=AttentionState(), registry=registry)
    follower._enter(code, None)
    heard = []
    registry.follow(code, "another page", lambda *offer: None, presence=heard.append)
    registry.presenter_left(code, presenter._session)
    clock.now += PRESENCE_GRACE - 0.5
    registry.sweep()
    assert heard == [] and follower.notice == ""  # a presenter reloading the page is back by now
    clock.now += 1
    registry.sweep()
    registry.sweep()
    assert heard == [False] and "The presenter has gone" in follower.notice
    assert follower.following and follower.state.query == (0.5, 1.5)  # the last view stays
    late = []
    registry.follow(code, "a page joining now", lambda *offer: None, presence=late.append)
    assert late == [False]
    registry.enter_as_presenter(code, token, "the presenter's new page")
    assert heard == [False, True] and follower.notice == ""
    registry.presenter_left(code, "the presenter's new page")
    clock.now += registry.end_after
    assert registry.sweep() == [code] and "has ended" in follower.notice


def test_a_presenter_who_comes_back_in_time_resumes(registry, clock):
    room, token = registry.create({"query": (2.0, 2.0)})
    registry.enter_as_presenter(room.code, token, "s1")
    registry.presenter_left(room.code, "s1")
    clock.now += 100
    assert registry.enter_as_presenter(room.code, token, "s2") is room
    registry.presenter_left(room.code, "s1")  # the old page going away later changes nothing
    clock.now += 1000
    assert registry.sweep() == [] and room.snapshot == {"query": (2.0, 2.0)}


def test_a_room_nobody_presents_ends_too(registry, clock):
    room, _ = registry.create()
    clock.now += 120
    assert registry.sweep() == [room.code]


def test_an_ended_code_can_be_reopened_only_by_its_presenter_and_is_not_given_out_again(registry, clock,
                                                                                        monkeypatch):
    room, token = registry.create()
    registry.end(room.code, token)
    with pytest.raises(RoomError):
        registry.enter_as_presenter(room.code, "another-token", "s9")
    assert registry.enter_as_presenter(room.code, token, "s1").code == room.code
    with pytest.raises(RoomError):
        registry.end(room.code, "another-token")
    registry.end(room.code, token)
    # a new room never gets a code ended the same day: its old presenter's link would drive it
    drawn = iter(room.code + "ABCDEF")
    monkeypatch.setattr("services.room_codes.secrets.choice", lambda _: next(drawn))
    assert registry.create()[0].code == "ABCDEF"


def test_end_after_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("ROOM_END_AFTER", raising=False)
    assert end_after_from_env() == 300
    monkeypatch.setenv("ROOM_END_AFTER", "2.5")
    assert end_after_from_env() == 2.5
    for bad in ("0", "-1", "soon", "nan"):
        monkeypatch.setenv("ROOM_END_AFTER", bad)
        with pytest.raises(ValueError, match="ROOM_END_AFTER must be a positive number"):
            end_after_from_env()
    monkeypatch.setenv("ROOM_SETTLE_AFTER", "3")
    assert seconds_from_env("ROOM_SETTLE_AFTER", 1.0) == 3
    monkeypatch.setenv("ROOM_SETTLE_AFTER", "inf s")
    with pytest.raises(ValueError, match="ROOM_SETTLE_AFTER"):
        seconds_from_env("ROOM_SETTLE_AFTER", 1.0)


def test_every_state_param_is_either_shared_or_local():
    names = set(AttentionState.param)
    shared, local = set(AttentionState.SHARED_PARAMS), set(AttentionState.LOCAL_PARAMS)
    assert not shared & local
    assert names == shared | local, f"classify {names - shared - local} in SHARED_PARAMS or LOCAL_PARAMS"


def test_a_snapshot_is_a_copy_and_applies_only_what_differs():
    a, b = AttentionState(), AttentionState()
    a.move_query(1.0, 1.0)
    snap = a.snapshot()
    snap["keys"][0, 0] = 99.0  # mutating the snapshot must not touch the presenter
    assert a.keys[0, 0] == 1.0
    snap = a.snapshot()
    assert b.apply_snapshot(snap) == ["query"]
    assert b.query == (1.0, 1.0) and b.result.output[1] == pytest.approx(4.0)
    assert b.apply_snapshot(snap) == []
    b.keys[0, 0] = 5.0
    assert a.keys[0, 0] == 1.0  # nothing is shared between the two states


def test_page_roles_without_a_server(registry):
    presenter_state, follower_state = AttentionState(), AttentionState()
    presenter = RoomControls(state=presenter_state, registry=registry)
    presenter._on_present(None)
    assert presenter.role == "presenter" and len(presenter.code) == CODE_LENGTH

    follower = RoomControls(state=follower_state, registry=registry)
    follower._enter(presenter.code, None)
    assert follower.role == "follower" and follower.following
    presenter_state.select_row(2)
    assert follower_state.selected == 2 and follower_state.query == (1.0, 1.0)

    # the follower moves the query: it explores on its own, the presenter does not move
    follower_state.move_query(-1.0, 0.5)
    assert not follower.following and presenter_state.query == (1.0, 1.0)
    presenter_state.move_query(0.5, 0.5)
    assert follower_state.query == (-1.0, 0.5)
    follower._on_toggle(None)  # Follow again
    assert follower.following and follower_state.query == (0.5, 0.5)
    np.testing.assert_array_equal(follower_state.keys, presenter_state.keys)


def test_a_code_spelled_otherwise_joins_its_room_without_a_server(registry):
    """Served, such a page reloads as the code's own spelling first (tests/ui/test_nginx.py); here it joins."""
    presenter = RoomControls(state=AttentionState(), registry=registry)
    presenter._on_present(None)
    code = presenter.code
    follower = RoomControls(state=AttentionState(), registry=registry)
    follower._enter(f" {code[:3].lower()}-{code[3:]} ", None)
    assert (follower.role, follower.code) == ("follower", code)


def test_a_wrong_code_leaves_the_explorer_alone(registry):
    page = RoomControls(state=AttentionState(), registry=registry)
    page._enter("ZZZZZZ", None)
    assert page.role == "alone" and "no room ZZZZZZ" in page.notice
    page._enter("<script>", None)
    assert "not valid" in page.notice and "<script>" not in page.notice


def test_the_room_notice_pane_is_made_with_the_page_s_first_notice_in_its_place_in_the_header(registry):
    """Most pages never have a room notice: its pane, bound to the notice and the language, was built with every page
    (a Panel object and three Bokeh models)."""
    import panel as pn

    page = RoomControls(state=AttentionState(), registry=registry)
    header = page.__panel__()
    assert header.objects == [page._present] and header.select(pn.pane.HTML) == []
    page._enter("ZZZZZZ", None)
    notice, = header.select(pn.pane.HTML)
    assert header.objects == [page._present, notice] and notice.visible and "room-notice" in notice.css_classes
    assert "no room ZZZZZZ" in notice.object and notice.object.startswith("<p>")
    page.state.lang = "fr"
    assert "ZZZZZZ" in notice.object and "no room" not in notice.object
    page.notice = ""
    assert header.objects == [page._present, notice] and not notice.visible  # hidden, kept
    page._enter("ZZZZZZ", None)
    assert header.select(pn.pane.HTML) == [notice] and notice.visible  # the same pane, shown again


def test_the_qr_code_is_an_inline_svg_of_the_link():
    svg = qr_svg("http://example.org/?room=K7M4QX")
    assert svg.startswith("<svg") and "http" not in svg.split(">", 1)[1]  # drawn, no external reference


def test_room_arguments_are_redacted_from_log_lines():
    record = logging.LogRecord("tornado.access", logging.INFO, __file__, 1, "%d %s %.2fms",
                               (200, "GET /?room=K7M4QX&token=s3cr-et_ (127.0.0.1)", 3.0), None)
    assert RedactLogLines().filter(record)
    assert record.getMessage() == "200 GET /?room=…&token=… (127.0.0.1) 3.00ms"


@pytest.mark.parametrize("query", [
    "%72oom=K7M4QX&%74oken=s3cr-et_",  # the names the log showed the token after
    "x=1&%52%4F%4F%4D=K7M4QX&To%6Ben=s3cr-et_",  # every letter of one encoded, upper case; a second name mixed
    "next=%2Fapp%3Froom%3DK7M4QX%26token%3Ds3cr-et_",  # a whole link, encoded into another argument
])
def test_room_arguments_are_redacted_however_their_names_are_encoded(query):
    """``404 GET /nope?%72oom=…&%74oken=<token>`` logged the presenter's token: the server reads ``%72oom`` as
    ``room``, and the redaction matched the name as written only."""
    from urllib.parse import parse_qs, unquote

    # what the server reads (Python's own decoding): the room's code and the token, under their names
    read = parse_qs(query) | parse_qs(unquote(parse_qs(query).get("next", [""])[0]).partition("?")[2])
    assert {k.lower(): v for k, v in read.items()}.keys() >= {"room", "token"}
    record = logging.LogRecord("tornado.access", logging.WARNING, __file__, 1, "%d %s %.2fms",
                               (404, f"GET /nope?{query} (127.0.0.1)", 0.5), None)
    assert RedactLogLines().filter(record)
    message = record.getMessage()
    assert "K7M4QX" not in message and "s3cr" not in message, message
    assert message.endswith(" (127.0.0.1) 0.50ms") and message.count("=…") == 2, message


def test_a_follower_takes_a_preset_and_the_edits_made_after_it():
    teacher, student = AttentionState(), AttentionState()
    teacher.preset = "Module 2: vector values"
    teacher.select_row(2)
    teacher.move_query(0.5, 1.5)
    assert student.apply_snapshot(teacher.snapshot())[0] == "preset"
    for name in AttentionState.SHARED_PARAMS:
        np.testing.assert_array_equal(np.asarray(getattr(student, name), dtype=object),
                                      np.asarray(getattr(teacher, name), dtype=object), err_msg=name)
    # an edited key makes the preset Custom; the follower gets the edited key, not a reloaded preset
    assert teacher.set_key(0, 1, "2.5")
    teacher.causal = True
    student.apply_snapshot(teacher.snapshot())
    assert student.preset == "Custom" and student.keys[0, 1] == 2.5 and student.causal
    assert student.query == (0.5, 1.5) and student.selected == 2
    np.testing.assert_allclose(student.result.weights, teacher.result.weights, rtol=0, atol=0)


def live_server(monkeypatch, registry):
    """server/room_live.py's routes on a real tornado server, over ``registry``; trusting X-Real-IP as a proxy's
    (the tests' clients each name their address). Returns (server, channel url prefix, open_, refused)."""
    import panel as pn
    from tornado.httpserver import HTTPServer
    from tornado.testing import bind_unused_port
    from tornado.web import Application
    from tornado.websocket import websocket_connect

    from server import room_live
    from server.room_live import SUBPROTOCOL, live_patterns
    from services import rooms

    monkeypatch.setitem(pn.state.cache, rooms.CACHE_KEY, registry)
    monkeypatch.setitem(pn.state.cache, room_live.CACHE_KEY, room_live.FailedTries())
    sock, port = bind_unused_port()
    server = HTTPServer(Application(live_patterns()), xheaders=True)  # no Origin header: no origin check
    server.add_sockets([sock])
    url = f"ws://127.0.0.1:{port}/room-live?room="

    async def open_(code, ticket=None, client="10.0.0.1"):
        from tornado.httpclient import HTTPRequest

        request = HTTPRequest(url + code, headers={"X-Real-IP": client})
        return await websocket_connect(request, subprotocols=[SUBPROTOCOL, ticket] if ticket is not None else None)

    async def refused(channel):
        try:  # a channel the server keeps would hold the test forever
            assert await asyncio.wait_for(channel.read_message(), 10) is None
        except asyncio.TimeoutError:
            return "kept open"
        return channel.close_code, channel.close_reason

    return server, open_, refused


NOT_FOLLOWING = (4403, "only a page following a running room opens its live channel")


@pytest.mark.server
def test_a_rooms_live_channels_are_its_following_pages_one_each(monkeypatch):
    """server/room_live.py on a real tornado server. One client opened 600 channels and held all 500 of a room's
    slots: a page following the room then got 4429. Now a channel needs a following page's ticket (4403 without),
    a page's newer channel replaces its old one (4409), and leaving the room closes it; 4429 once the process holds
    as many channels as it accepts, whichever rooms they follow."""
    from services import room_hand

    monkeypatch.setattr(room_hand, "MAX_LIVE_CHANNELS", 3)
    registry = RoomRegistry()
    room, token = registry.create()
    other, _ = registry.create()
    for key in ("a", "b", "c"):
        registry.follow(room.code, key, lambda *offer: None)
    registry.follow(other.code, "d", lambda *offer: None)
    ticket = {key: registry.live_ticket(room.code, key) for key in "abc"}
    ticket["d"] = registry.live_ticket(other.code, "d")
    assert len(set(ticket.values())) == 4 and registry.live_ticket(room.code, "stranger") is None

    async def channels():
        server, open_, refused = live_server(monkeypatch, registry)
        # a hostile client's sockets, without a ticket or with one it made up: none takes a slot
        hostile = [await open_(room.code, client="10.0.0.66") for _ in range(5)] + [
            await open_(room.code, made_up, client="10.0.0.66") for made_up in ("x" * 24, ticket["a"][:-1], "")]
        why = {await refused(c) for c in hostile}
        d = await open_(other.code, ticket["d"])  # another room's page: the process's channels, not the room's
        a = await open_(room.code, ticket["a"])
        b = await open_(room.code, ticket["b"])
        full = await refused(await open_(room.code, ticket["c"]))
        again = await open_(room.code, ticket["a"])  # page a's newer channel: a's old one goes
        replaced = await refused(a)
        registry.publish(room.code, token, {"query": (0.5, 0.5)}, query_only=True)
        got = json.loads(await again.read_message()), json.loads(await b.read_message())
        registry.unfollow(room.code, "b")  # page b leaves the room: its channel closes, and c gets a slot
        left = await refused(b)
        c = await open_(room.code, ticket["c"])
        stale = await refused(await open_(room.code, ticket["b"]))
        missing = await refused(await open_("ZZZZZZ", ticket["c"]))
        registry.publish(room.code, token, {"query": (1.0, 0.5)}, query_only=True)
        latest = json.loads(await c.read_message())
        for kept in (again, c, d):
            kept.close()
        server.stop()
        return why, full, replaced, got, left, stale, missing, latest

    why, full, replaced, got, left, stale, missing, latest = asyncio.run(channels())
    assert why == {NOT_FOLLOWING}
    assert full == (4429, "this server has as many live channels as it accepts")
    assert replaced == (4409, "replaced by this page's newer live channel")
    assert got == ({"version": 1, "query": [0.5, 0.5]},) * 2
    assert left == (4404, "this page has left the room")
    assert stale == missing == NOT_FOLLOWING
    assert latest == {"version": 2, "query": [1.0, 0.5]}


@pytest.mark.server
def test_a_live_channel_tells_no_one_which_rooms_run_and_a_client_that_keeps_guessing_is_refused(monkeypatch):
    """/room-live answered 4404 for no room and 4403 for a running room, at 338 tries a second with no limit: a
    code's room could be told from no room. Now both get one answer, and a client whose tries keep failing is
    refused before its handshake, while another client's page opens its channel as usual."""
    from tornado.httpclient import HTTPClientError

    from server.room_live import FAILED_TRIES

    registry = RoomRegistry()
    room, _ = registry.create()
    registry.follow(room.code, "page", lambda *offer: None)
    ticket = registry.live_ticket(room.code, "page")

    async def guesses():
        server, open_, refused = live_server(monkeypatch, registry)
        running = [await refused(await open_(room.code, guess, client="10.0.0.66"))
                   for guess in [None, "x" * 24] * (FAILED_TRIES // 4)]
        absent = [await refused(await open_("ZZZZZZ", guess, client="10.0.0.66"))
                  for guess in [None, "x" * 24] * (FAILED_TRIES // 4)]
        try:
            await open_(room.code, "x" * 24, client="10.0.0.66")
            stopped = "handshake made"
        except HTTPClientError as e:
            stopped = e.code
        honest = await open_(room.code, ticket, client="10.0.0.7")  # a page of the class, at another address
        # and one behind the same address as the guesser (a school's network): its ticket is no guess
        registry.follow(room.code, "page behind the same address", lambda *offer: None)
        behind = await open_(room.code, registry.live_ticket(room.code, "page behind the same address"),
                             client="10.0.0.66")
        server.stop()
        honest.close()
        behind.close()
        return running, absent, stopped

    running, absent, stopped = asyncio.run(guesses())
    assert set(running) == set(absent) == {NOT_FOLLOWING}
    assert stopped == 429


def test_a_page_has_one_running_room_given_back_each_time_it_presses_present(registry, clock):
    """20,000 Present clicks from one page made 20,000 rooms (48 MB while they ran)."""
    rooms = {registry.create({"query": (0.0, 1.0)}, creator="page")[0].code for _ in range(20_000)}
    assert len(rooms) == 1 and len(registry) == 1
    room, token = registry.create({"query": (2.0, 2.0)}, creator="page")
    assert room.snapshot == {"query": (2.0, 2.0)}  # nobody presents it yet: the page's newest view
    assert registry.enter_as_presenter(room.code, token, "teacher") is room
    registry.publish(room.code, token, {"query": (1.0, 1.0)})
    assert registry.create({"query": (9.0, 9.0)}, creator="page")[0].snapshot == {"query": (1.0, 1.0)}
    assert registry.create(creator="another page")[0] is not room  # each page its own


def test_a_page_starts_at_most_a_few_rooms_a_minute(registry, clock):
    from services.rooms import MAX_ROOMS_PER_MINUTE, TooManyRooms

    for _ in range(MAX_ROOMS_PER_MINUTE):  # each ended by its presenter before the next
        room, token = registry.create(creator="page")
        registry.end(room.code, token)
        clock.now += 1
    with pytest.raises(TooManyRooms):
        registry.create(creator="page")
    assert len(registry) == 0
    clock.now += 60
    assert registry.create(creator="page")[0].code
    registry.sweep()
    assert set(registry._creators) == {"page"}  # its room runs
    clock.now += 10_000
    registry.sweep()  # the room has ended (nobody presented it), and the minute has long passed
    assert registry._creators == {}


def test_an_ended_room_leaves_four_bytes_for_a_day(registry, clock):
    """Each ended code was kept 24 h in a dict of strings and times: 13 MB after 20,000 Present clicks."""
    import gc
    import tracemalloc

    codes = []
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(20_000):
        room, token = registry.create({"query": (0.0, 1.0)})
        codes.append(room.code)
        registry.end(room.code, token)
    kept = tracemalloc.get_traced_memory()[0] - before - sys.getsizeof(codes) - sum(map(sys.getsizeof, codes))
    tracemalloc.stop()
    assert len(registry._ended) == 20_000 and kept < 20_000 * 8, kept
    # not given to a new room for 24 h, whatever the draw
    drawn = iter(codes[-1] + codes[0] + "ABCDEF")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("services.room_codes.secrets.choice", lambda _: next(drawn))
        assert registry.create()[0].code == "ABCDEF"
    clock.now += 24 * 3600 - 1
    registry.sweep()
    assert codes[0] in registry._ended
    clock.now += 3600 + 1  # a day and an hour (the batch) later, all of them are forgotten
    registry.sweep()
    assert len(registry._ended) == 1 and codes[0] not in registry._ended  # ABCDEF, ended by the sweep


def test_a_page_that_starts_room_after_room_is_told_to_wait(registry):
    page = RoomControls(state=AttentionState(), registry=registry)
    for _ in range(3):  # present, stop, present again ... (no page around it: it presents in place)
        page._on_present(None)
        assert page.role == "presenter"
        page._on_stop(None)
    page._on_present(None)
    assert page.role == "alone" and "started several rooms in the last minute" in page.notice
    assert len(registry) == 0


def _presenting(registry, page_address: str):
    """A presenter's controls on a page the browser says is at ``page_address``."""
    from link.browser import BrowserBridge

    state = AttentionState()
    room, token = registry.create(state.snapshot(), creator="teacher")
    browser = BrowserBridge(state=state)
    browser.page_address = page_address
    controls = RoomControls(state=state, registry=registry, browser=browser)
    controls._enter(room.code, token)
    assert controls.role == "presenter"
    return controls


def test_a_presenter_on_localhost_gets_a_join_link_on_an_address_the_class_reaches(registry, monkeypatch):
    """Opened as localhost, the join link names this machine's network address where the server listens on it and
    accepts pages from it, and says so; the QR code holds that link."""
    import widgets.room

    monkeypatch.setattr(widgets.room, "class_address_of", lambda page: class_address(
        page, "0.0.0.0", ["192.0.2.2", "198.51.100.7"], ["192.0.2.2:5006", "198.51.100.7:5006"]))
    controls = _presenting(registry, "http://localhost:5006/")
    assert controls.join_link() == f"http://192.0.2.2:5006/?room={controls.code}"
    join = controls._join_pane.object
    assert f'href="http://192.0.2.2:5006/?room={controls.code}"' in join and "localhost" not in join.split("</a>")[0]
    assert "To each student localhost:5006 would be their own device" in join and "198.51.100.7:5006" in join
    assert controls.bar.visible and controls._qr.object == qr_svg(controls.join_link())


def test_a_presenter_on_a_server_the_class_cannot_reach_is_told_what_to_set(registry, monkeypatch):
    import widgets.room

    monkeypatch.setattr(widgets.room, "class_address_of", lambda page: class_address(
        page, "127.0.0.1", ["192.0.2.2"], ["localhost:5006"]))
    controls = _presenting(registry, "http://127.0.0.1:5006/")
    join = controls._join_pane.object
    assert f">http://127.0.0.1:5006/?room={controls.code}</a>" in join
    assert "Your class cannot reach 127.0.0.1:5006" in join
    assert "<code>ADDRESS=0.0.0.0 BOKEH_ALLOW_WS_ORIGIN=192.0.2.2:5006</code>" in join
    assert "present from http://192.0.2.2:5006/" in join
    # a page on an address the class shares: no note
    monkeypatch.setattr(widgets.room, "class_address_of", lambda page: class_address(page, "0.0.0.0", [], []))
    other = _presenting(registry, "http://school.example:5006/")
    assert "room-reach" not in other._join_pane.object


def test_the_presenter_s_bar_folds_to_its_code(registry):
    controls = _presenting(registry, "http://school.example:5006/")
    assert controls._join_pane.visible and controls._buttons.visible
    controls._on_fold(None)
    assert not controls._join_pane.visible and not controls._buttons.visible and controls._code_card.visible
    assert controls._fold.label == "Join link ▾"
    controls._on_fold(None)
    assert controls._join_pane.visible and controls._fold.label == "Fold ▴"
    controls._on_stop(None)
    assert not controls.bar.visible


def test_the_room_bar_is_made_and_placed_the_first_time_the_page_presents(registry):
    """Most pages never present: the bar, a hidden Panel column above the tabs, was built with every page."""
    page = RoomControls(state=AttentionState(), registry=registry)
    placed = []
    page.bar_goes(placed.append)
    page._enter("ZZZZZZ", None)  # a notice, no room
    assert placed == []
    page._on_present(None)
    assert placed == [page.bar] and page.bar.visible and page.bar.objects
    page._on_stop(None)
    assert not page.bar.visible
    page._on_present(None)
    assert placed == [page.bar] and page.bar.visible  # the same bar, placed once
    late = []
    page.bar_goes(late.append)  # a page that places it after it is made
    assert late == [page.bar]


class _Connecting(RoomRegistry):
    """Rooms shared through Redis as a process holds them while it connects: no code until it has claimed one
    (``codes_ready``), which it does, or not (``comes``)."""

    def __init__(self, comes: bool):
        super().__init__(end_after=120)
        self.comes, self.ready, self.waits = comes, False, 0

    def _new_code(self) -> str:
        if not self.ready:
            raise CodesNotReady("Rooms are not ready yet: this server is connecting to Redis.")
        return super()._new_code()

    async def codes_ready(self, timeout: float) -> bool:
        self.waits += 1
        self.ready = self.comes
        return self.comes


@pytest.mark.parametrize("comes", [True, False])
def test_present_on_a_server_still_claiming_room_codes_waits_for_one_then_opens_the_room(comes):
    """A teacher pressing Present on a process just started (or back from Redis) was told rooms are unavailable;
    Present now waits for the process's first code, then presses again for the teacher, in the page's turn."""
    from link.browser import BrowserBridge

    registry, state = _Connecting(comes), AttentionState()
    browser = BrowserBridge(state=state)
    page = RoomControls(state=state, registry=registry, browser=browser)
    turns = []
    page._doc = type("Doc", (), {"session_context": object(),
                                 "add_next_tick_callback": lambda self, cb: turns.append(cb)})()
    page._on_present(None)  # without a running loop, the wait runs to its end at once (param's executor)
    assert registry.waits == 1 and len(turns) == 1
    assert page.notice == "" and not browser.navigate and len(registry) == 0  # nothing said or done meanwhile
    turns.pop()()  # the page's turn: Present again
    if comes:
        room = next(iter(registry._rooms.values()))
        assert browser.navigate.startswith(f"?room={room.code}&token=") and page.notice == ""
    else:
        assert page.notice == UNAVAILABLE and not browser.navigate and len(registry) == 0
    assert registry.waits == 1  # one wait, never a second on the pressed-again turn


def test_the_hand_goes_to_the_room_only_while_the_page_presents(registry, monkeypatch):
    """A drag's hand (link/drag.py, ``DragChannel.hand``) reaches the room's live channels ahead of the state while the
    page presents; before it presents and after it stops, its hand goes nowhere (nor is it watched: it changes with
    every position a drag sends)."""

    class Drag(param.Parameterized):
        hand = param.NumericTuple(default=None, allow_None=True, length=2)

    published = []
    monkeypatch.setattr(registry, "publish_hand", lambda code, token, hand: published.append((code, hand)))
    drag, room = Drag(), RoomControls(state=AttentionState(), registry=registry)
    room.share_hand_of(drag)
    drag.hand = (0.25, 0.5)
    room._on_present(None)
    drag.hand = (0.5, 0.75)
    code = room.code
    room._on_stop(None)
    drag.hand = (0.75, 1.0)
    assert published == [(code, (0.5, 0.75))]
    assert not drag.param.watchers.get("hand", {}).get("value")
