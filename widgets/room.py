"""Follow the presenter: one page drives a room, the class's pages follow it live.

This module holds a page's role in its room and the moves between roles (entering from the link, presenting,
following, taking the room's views under a lock, leaving); what the page shows of it is
``widgets/room_view.py`` (:class:`~widgets.room_view.RoomView`, the view half of :class:`RoomControls`).

:class:`RoomControls` is the page's end of a room (:mod:`services.rooms`). Its
role comes from the page's link:

- no ``room``: a "Present" button. Pressing it opens a room and reloads the page
  as the presenter link ``?room=CODE&token=TOKEN`` (the link the teacher can reopen on any process);
- ``room`` and the room's ``token``: the presenter. Every change to the state's
  ``SHARED_PARAMS`` is published to the room; the page shows the code, the join
  link and its QR code;
- ``room`` alone: a follower. It takes the room's view at once and every later
  one, until the learner presses "Explore on my own" (or moves anything
  themselves); "Follow again" snaps back to the presenter's current view.

The room's class poll (:mod:`widgets.poll`) is the presenter's "Class poll" card and each follower's card
of the question asked, whether the follower follows the view or explores on their own.

A follower's document is only ever changed in a callback on its own session
(``add_next_tick_callback``, ``add_timeout_callback``), so it runs under that document's
lock; pending snapshots are coalesced, so a slow follower gets the latest view, never a
backlog, and the presenter's callback never waits for any follower.

While the presenter drags, a view differs from the follower's only in the query. Taking
it in full would recompute and re-render every view of every follower's page on the
server, for every move (tens of ms each: a class of 60 would fall seconds behind). So the
page takes the presenter's query from the room's live channel (``server/room_live.py``)
and computes and draws the numbers itself, as it does for its own drag
(``link/drag.js``); its server only tells it, through the page's live source
(``DragChannel.live``), which room to follow and which view its own numbers show. Once
the room's view has rested for ``RoomRegistry.settle_after`` seconds, the follower's
server takes it in full, one page of the class at a time: its numbers replace the page's,
and the inspector, exports and address follow.
"""

from __future__ import annotations

import threading
import time
from urllib.parse import quote, urlencode

import panel as pn
import param
from bokeh.events import ConnectionLost
from panel.io.state import set_curdoc

from link.browser import BrowserBridge
from link.row import OneRow
from link.updates import one_message
from services.network import ClassAddress, class_address_of
from services.room_hand import LIVE_ROUTE
from services.rooms import (
    CodesNotReady,
    RoomError,
    RoomRegistry,
    RoomsUnavailable,
    TooManyRooms,
    get_registry,
    normalize_code,
)
from services.sessions import connection_count
from session.address import address_of
from session.i18n import N_
from session.state import AttentionState
from widgets.poll import FollowerPoll, PresenterPoll
from widgets.room_view import RoomView

#: Rooms are shared through Redis (services/rooms_redis.py) and this server cannot reach it now.
UNAVAILABLE = N_("Rooms are unavailable right now: this server cannot reach the store it shares rooms through. "
                 "Try again in a minute.")
#: Seconds Present waits for a code where rooms are shared and this process has claimed none yet (it has just
#: started, or reconnected to Redis): claiming takes a round trip or a few, longer on a loaded server.
CODES_WAIT_S = 20.0
#: A follower's notice while the room has no presenter (the presenter's page, or its server, has gone).
PRESENTER_GONE = N_("The presenter has gone. You keep the last view, and follow again when they come back.")


def _arg(name: str) -> str | None:
    values = pn.state.session_args.get(name) if pn.state.curdoc and pn.state.curdoc.session_context else None
    return values[0].decode(errors="replace") if values else None


class RoomControls(RoomView, pn.viewable.Viewer):
    """The "Present" button, the presenter's room bar, or the follower's banner, by the page's link.

    The button, the banner and the notices sit in the page's header (``__panel__``); a presenter's room is
    :attr:`bar`, which the page puts above the tabs, out of the query plot's way: its code stays large, and the join
    link, the QR code, the poll and Stop fold into it (``.room-fold``).

    Test hooks: the card is ``.room-card``, the code in it ``.room-code``, the
    join link ``.room-link``, what it says of the link's address ``.room-reach``; the notice is ``.room-notice``.
    """

    state = param.ClassSelector(class_=AttentionState, doc="The session state this page renders.")
    role = param.Selector(default="alone", objects=["alone", "presenter", "follower"], constant=True,
                          doc="What this page is to a room.")
    code = param.String(default="", constant=True, doc="The room's code; not a secret.")
    following = param.Boolean(default=False, doc="A follower page takes the presenter's view.")
    notice = param.String(default="", doc="What happened to the page's room, for the learner.")
    browser = param.ClassSelector(class_=BrowserBridge, allow_None=True, constant=True,
                                  doc="The page's browser bridge: its address, and where it goes to present or join.")
    live = param.ClassSelector(class_=OneRow, allow_None=True, constant=True,
                               doc="The page's live source (DragChannel.live): which room's live channel the "
                                   "page follows. Without it a follower takes every view in full.")

    def __init__(self, registry: RoomRegistry | None = None, **params):
        super().__init__(**params)
        self._registry = registry if registry is not None else get_registry()  # an empty registry is falsy
        self._token: str | None = None  # the presenter token: never a param, never logged
        self._doc = pn.state.curdoc
        self._awaiting_code = False  # a Present waits for a room code (services.rooms.CodesNotReady)
        ctx = self._doc.session_context if self._doc else None
        self._session = ctx.id if ctx else f"local-{id(self)}"
        self._pending = None  # (version, snapshot) offered by the room, not yet applied
        self._scheduled = False
        self._applying = False
        self._lock = threading.Lock()
        self._room = None  # the followed room
        self._poll: FollowerPoll | PresenterPoll | None = None  # the room's class poll on this page, once needed
        # the live channel's path under the server's prefix (server/room_live.py)
        self._live_path = (pn.state.base_url or "/").rstrip("/") + LIVE_ROUTE
        # The page acts on changes of the live source only, not on its value at load: so the first value
        # is written once the page has loaded.
        self._loaded = ctx is None
        if ctx is not None:
            pn.state.onload(self._on_load)
        self._shown_version = 0  # the room's version this page's state (its server's numbers) shows
        self._settling = False  # a settle callback is scheduled

        self._build_view()

        self._watcher = self.state.param.watch(self._on_state_change, list(AttentionState.SHARED_PARAMS))
        self.state.param.watch(self._relabel, "lang")
        if self.browser is not None:  # the join link is made of the page's address, which the browser reports
            self.browser.param.watch(lambda _: self.role == "presenter" and self._show_presenter(), "page_address")
        if ctx is not None:
            self._doc.on_session_destroyed(self._on_destroyed)
            self._doc.on_event(ConnectionLost, self._on_connection_lost)
            self._registry.start_sweeping()
        self._enter(_arg("room"), _arg("token"))

    # -- entering a room from the page's link ---------------------------------------------------------------------

    def _enter(self, room_arg: str | None, token: str | None) -> None:
        if room_arg is None:
            return
        code = normalize_code(room_arg)
        if code is None:
            self.notice = N_("The link's room code is not valid. This is the explorer on its own.")
            return
        if room_arg != code and self._reload_with_code(code):
            return
        refused = []
        if token:
            try:
                room = self._registry.enter_as_presenter(code, token, self._session)
            except RoomsUnavailable:
                self.notice = UNAVAILABLE
                return
            except RoomError:
                # the registry says why in English; the page says it in the learner's language
                refused = [N_("This presenter link is not valid for room {code} on this server.", code=code)]
                if not self._registry.secret.persistent:
                    refused.append(N_("Presenter links stop working when the server restarts (no fixed room secret "
                                      "was set for it); press Present to start a new room."))
            else:
                self._token = token
                self._set_role("presenter", code)
                if room.snapshot is not None:
                    self.state.apply_snapshot(room.snapshot)
                self._publish()
                if self._doc is not None and self._doc.session_context is not None:
                    pn.state.onload(self._show_presenter)
                else:
                    self._show_presenter()
                return
        served = self._doc is not None and self._doc.session_context is not None
        try:
            if served:
                # The page joins the room once it has loaded (_join): a page built and never shown (its
                # address fetched by a script, its socket closed before the page had drawn) is no follower. It
                # would be counted among the pages following the room on the presenter's poll card, and sent
                # each of the presenter's views, until Bokeh discarded its session 60-90 s later.
                room = self._registry.get(code)
                if room is None or room.ended:
                    raise RoomError(f"There is no room {code} running on this server.")
            else:
                room = self._registry.follow(code, self._session, self._offer, self._on_presence)
        except RoomError:
            if not self._registry.available:
                self.notice = UNAVAILABLE
                return
            self.notice = N_("{refused} There is no room {code} on this server: it may have ended. This is the "
                             "explorer on its own.", refused=refused, code=code) if refused else N_(
                "There is no room {code} on this server: it may have ended. This is the explorer on its own.",
                code=code)
            return
        if refused:
            self.notice = N_("{refused} Following the room instead.", refused=refused)
        self._room = room
        self._set_role("follower", code)
        # the poll's widgets are built when the room asks a question (at once if one is open now)
        self._poll = FollowerPoll(self._registry, code, self._session, on_build=self._show_follower,
                                  tr=lambda: self.state.tr)
        self.following = True
        self._take_room_view()
        self._show_follower()
        if served:
            pn.state.onload(self._join)

    def _join(self) -> None:
        """The page has loaded: it follows the room from now, and takes any view the room has moved to since the
        page was built (or, if the room ended meanwhile, says so and keeps the view it shows)."""
        if self._closed:
            return
        try:
            self._room = self._registry.follow(self.code, self._session, self._offer, self._on_presence)
        except RoomError:
            self._on_room_ended()
            return
        self._catch_up()
        self._sync_live()

    def _reload_with_code(self, code: str) -> bool:
        """Reload the page as ``?room=CODE`` (the code as the server writes it); False where that cannot be done.

        So a page's address, which it writes back and a learner may share, names the room as the presenter's
        card does. (A proxy routing by the code as typed once needed it too: every process shares rooms through
        Redis now, and ``deploy/nginx.conf`` routes by the page's cookie.)
        """
        if self._doc is None or self._doc.session_context is None or self.browser is None:
            return False
        args = {name: _arg(name) for name in pn.state.session_args if not name.startswith("bokeh-")}
        self.notice = N_("Opening room {code}…", code=f"{code[:3]} {code[3:]}")
        self.browser.navigate = "?" + urlencode({**args, "room": code})
        return True

    def _set_role(self, role: str, code: str) -> None:
        with param.edit_constant(self):
            self.param.update(role=role, code=code)

    # -- presenter --------------------------------------------------------------------------------------------------

    def _on_present(self, _event, waited: bool = False) -> None:
        try:
            # one running room per page: pressing again gives the same room back (services/rooms.py)
            room, token = self._registry.create(self.state.snapshot(), creator=self._session)
        except TooManyRooms:
            self.notice = N_("This page has started several rooms in the last minute. Wait a minute, then press "
                             "Present again.")
            return
        except CodesNotReady:
            doc = self._doc
            if waited or doc is None or doc.session_context is None:
                self.notice = UNAVAILABLE
                return
            if self._awaiting_code:  # pressed again meanwhile: one wait a page
                return
            self._awaiting_code = True

            async def when_ready():  # then press again for the teacher, in the page's turn
                try:
                    await self._registry.codes_ready(CODES_WAIT_S)
                finally:
                    self._awaiting_code = False
                if doc.session_context is not None:
                    doc.add_next_tick_callback(lambda: self._on_present(None, waited=True))
            pn.state.execute(when_ready)
            return
        except RoomsUnavailable:  # rooms are shared through Redis, which this server cannot reach now
            self.notice = UNAVAILABLE
            return
        if self.browser is None:  # no page around it (component tests): present in place
            self._registry.enter_as_presenter(room.code, token, self._session)
            self._token = token
            self._set_role("presenter", room.code)
            self._show_presenter()
            return
        # Reload as the presenter link, the one the teacher reopens on any process (the page's own, behind a proxy
        # routing by cookie). A process knows the page only from its address: the address carries the whole view
        # (session/address.py), as it is now, not as the page was opened.
        self.browser.navigate = "?" + urlencode({"room": room.code, "token": token, **address_of(self.state)})

    def _publish(self, query_only: bool = False) -> None:
        try:
            self._registry.publish(self.code, self._token, self.state.snapshot(), query_only)
        except RoomError:
            self._drop_poll()
            self._set_role("alone", "")
            self._token = None
            self.notice = N_("Your room has ended. Press Present to start a new one.")
            self._show_alone()

    def share_hand_of(self, drag) -> None:
        """Send ``drag.hand`` (``link/drag.py``'s ``DragChannel``) to the followers while this page presents: the
        hand is watched only then, as it changes with every position a drag sends."""
        watcher = None

        def presenting(*_):
            nonlocal watcher
            if self.role == "presenter" and watcher is None:
                watcher = drag.param.watch(self.share_hand, "hand")
            elif self.role != "presenter" and watcher is not None:
                drag.param.unwatch(watcher)
                watcher = None

        self.param.watch(presenting, "role")
        presenting()

    def share_hand(self, event) -> None:
        """Watcher of the query plot's ``hand``: a presenter's pointer reaches the followers before its state."""
        if self.role == "presenter" and self._token and event.new is not None:
            self._registry.publish_hand(self.code, self._token, event.new)

    def join_link(self) -> str:
        """The link a class opens to follow this page: the page's address with only ``?room=CODE``, on an address
        of this machine the class can reach where the page was opened as ``localhost`` (:func:`class_address_of`)."""
        return f"{self._reach().url}?room={quote(self.code)}"

    def _reach(self) -> ClassAddress:
        here = self.browser.page_address if self.browser is not None else ""
        try:
            return class_address_of(here)
        except ValueError:  # not an address (the page reports its own: a forged one changes only this page)
            return ClassAddress(here, "")

    def _on_stop(self, _event) -> None:
        self._registry.end(self.code, self._token)
        self._drop_poll()
        self._token = None
        self._set_role("alone", "")
        self.notice = N_("The room has ended; followers keep their last view.")
        self._show_alone()

    # -- follower -------------------------------------------------------------------------------------------------

    def _offer(self, version, snapshot, query_only=False) -> None:
        """The room's listener; runs in the presenter's callback, so it only records and schedules."""
        if snapshot is not None and not self.following:
            return
        doc = self._doc  # read once: the page may close meanwhile
        served = doc is not None and doc.session_context is not None
        with self._lock:
            if query_only and served and self.live is not None and not self._scheduled:
                # A drag: the page previews it from the room's live channel (server/room_live.py); this
                # server takes the view in full once the room rests.
                arm, self._settling = not self._settling, True
                if arm:
                    doc.add_timeout_callback(self._settle, round(self._registry.settle_after * 1000))
                return
            self._pending = (version, snapshot)
            if self._scheduled:
                return
            self._scheduled = True
            self._requested = time.perf_counter()
        if served:
            # Paced like a drag (link/drag.py): after each view a follower waits as long as that
            # view took from offer to shown, so a big class on one server sees fewer, newer views instead of
            # a growing queue of stale ones; the newest view always lands.
            wait = self._next_take - self._requested
            if wait > 0:
                doc.add_timeout_callback(self._take_pending, max(1, round(wait * 1000)))
            else:
                doc.add_next_tick_callback(self._take_pending)
        else:
            self._take_pending()

    _next_take = _requested = 0.0
    _closed = False

    def _on_presence(self, here: bool) -> None:
        """The room's listener of its presenter; runs in another page's callback, so it only schedules."""
        doc = self._doc
        if doc is not None and doc.session_context is not None:
            doc.add_next_tick_callback(lambda: self._show_presence(here))
        else:
            self._show_presence(here)

    def _show_presence(self, here: bool) -> None:
        if self._closed or self.role != "follower":
            return
        with set_curdoc(self._doc):
            if not here:
                self.notice = PRESENTER_GONE
            elif self.notice == PRESENTER_GONE:
                self.notice = ""

    def _take_pending(self) -> None:
        with self._lock:
            pending, self._pending, self._scheduled = self._pending, None, False
            requested = self._requested
        if pending is None or self._closed:
            return
        version, snapshot = pending
        with set_curdoc(self._doc):
            if version is None:
                self._on_room_ended()
            elif self.following:
                self._apply(snapshot, version)
        done = time.perf_counter()
        self._next_take = done + (done - requested)

    def _settle(self) -> None:
        """Take the room's view in full once it has rested for ``settle_after`` seconds.

        The room's rest, not this page's: taking every view of a drag in full is what the live channel
        spares the server. One page of the class at a time (``RoomRegistry.begin_settle``), so that a
        presenter who drags again soon finds the server free between two pages, and the class stops
        taking the old view as soon as the new drag moves the room.
        """
        doc, room, settle_after = self._doc, self._room, self._registry.settle_after
        if room is None or self._closed:
            return
        resting = self._registry.resting_for(self.code)
        if resting is not None and resting < settle_after:
            if doc is not None:
                doc.add_timeout_callback(self._settle, max(1, round((settle_after - resting) * 1000)))
            return
        if not self._registry.begin_settle(self.code, self._settle_turn):
            return  # another page of the class is taking the view: this one's turn comes after it
        try:
            with self._lock:
                self._settling = False
            self._catch_up()
        finally:
            self._registry.end_settle(self.code)

    def _settle_turn(self) -> bool:
        """This page's turn to take the room's view: False if the page has gone."""
        doc = self._doc
        if doc is None or self._closed:
            return False
        doc.add_next_tick_callback(self._settle)
        return True

    def _take_room_view(self) -> None:
        """Take the room's current view in full, whatever this page shows now (joining, following again)."""
        view = self._registry.view(self.code)
        if view is not None and view[1] is not None:
            self._apply(view[1], view[0])

    def _catch_up(self) -> None:
        """Take the room's newest view in full, if this page's server has not shown it yet."""
        view = self._registry.view(self.code)
        if view is None and self._room is not None and self._room.ended:
            view = (self._room.version, self._room.snapshot)  # the room's last view: nobody changes it now
        if view is None or view[1] is None or view[0] <= self._shown_version:
            return
        if self.following and not self._closed:
            with set_curdoc(self._doc):
                self._apply(view[1], view[0])

    def _apply(self, snapshot, version: int | None = None) -> None:
        self._applying = True
        try:
            with one_message(self._doc):
                self.state.apply_snapshot(snapshot)
                if version is not None:
                    self._shown_version = version
                    self._sync_live()
        finally:
            self._applying = False

    def _sync_live(self) -> None:
        """Tell the page which room to follow live (none: ""), where the channel is, its ticket for it (this page
        alone sees it: it makes the channel this page's), and which version its server's numbers show."""
        if self.live is not None and self._loaded:
            room = self.code if self.role == "follower" and self.following else ""
            ticket = (self._registry.live_ticket(room, self._session) if room else None) or ""
            self.live.data = {"room": [room], "version": [self._shown_version], "path": [self._live_path],
                              "ticket": [ticket]}

    def _on_load(self) -> None:
        self._loaded = True
        self._sync_live()

    def _on_room_ended(self) -> None:
        self._catch_up()  # the learner keeps the view they see
        self.following = False
        self.notice = N_("Room {code} has ended. You keep the last view.", code=self.code)
        self._drop_poll()
        self._show_ended()

    def _on_toggle(self, _event) -> None:
        if self.following:
            self._catch_up()  # the learner explores from the view they see
            self.following = False
        else:
            room = self._registry.get(self.code)
            if room is None:
                self._on_room_ended()
                return
            self._room = room
            self.following = True
            self._take_room_view()

    def _on_state_change(self, *events) -> None:
        if self.role == "presenter" and self._token:
            self._publish(query_only={e.name for e in events} == {"query"})
        elif self.role == "follower" and self.following and not self._applying:
            self.following = False  # the learner moved something: they explore on their own now

    @param.depends("following", watch=True)
    def _following_changed(self) -> None:
        self._show_follower()

    # -- leaving ----------------------------------------------------------------------------------------------------

    def _on_connection_lost(self, _event) -> None:
        """The page's websocket has closed, and nothing reopens it (the app leaves Panel's ``reconnect`` off): the
        page has gone now, not when Bokeh discards its session 15-30 s later. Until then the room would go on
        counting it among the pages following and applying each of the presenter's views to it: a script
        opening pages that answer a poll and close at once made the presenter's own keys wait behind them. A
        second socket someone opened onto the page's session closing leaves the page as it is."""
        if connection_count(self._doc) == 0:
            self._on_destroyed(None)

    def _on_destroyed(self, _session_context) -> None:
        if self._closed:
            return  # the connection was lost first
        if self.role == "presenter":
            self._registry.presenter_left(self.code, self._session)
        elif self.role == "follower":
            self._registry.unfollow(self.code, self._session)
        if self._poll is not None:
            self._poll.close()
        # Let the closed page's document go: whatever still holds this page's state would otherwise keep
        # the whole document (every Bokeh model of the page) alive through this view.
        self.state.param.unwatch(self._watcher)
        self._closed, self._doc = True, None
