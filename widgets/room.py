"""Follow the presenter: one page drives a room, the class's pages follow it live.

:class:`RoomControls` is the page's end of a room (:mod:`server.rooms`). Its
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
from functools import cached_property
from html import escape
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

import panel as pn
import param
import segno
from bokeh.events import ConnectionLost
from panel.io.state import set_curdoc

from link.browser import BrowserBridge
from link.row import OneRow
from link.updates import one_message
from services.network import ClassAddress, class_address_of
from services.room_hand import LIVE_ROUTE
from services.rooms import RoomError, RoomRegistry, RoomsUnavailable, TooManyRooms, get_registry, normalize_code
from services.sessions import connection_count
from session.address import address_of
from session.i18n import N_, translator
from session.state import AttentionState
from widgets.poll import FollowerPoll, PresenterPoll

ROOM_CSS = (Path(__file__).parent.parent / "static" / "room.css").read_text()
#: Rooms are shared through Redis (server/rooms_redis.py) and this server cannot reach it now.
UNAVAILABLE = N_("Rooms are unavailable right now: this server cannot reach the store it shares rooms through. "
                 "Try again in a minute.")
#: A follower's notice while the room has no presenter (the presenter's page, or its server, has gone).
PRESENTER_GONE = N_("The presenter has gone. You keep the last view, and follow again when they come back.")
#: "Copy this lesson's link": the page's address as the address bar shows it now (the whole view, with a lesson
#: link's tabs and header), less the room's arguments, so it opens the same lesson on its own. Without the
#: clipboard (no permission, or a page served over plain http) the link is shown selected, to copy by hand.
COPY_LESSON = (
    # window's: an inline handler looks names up on the element and its document first, and document.URL is a string
    "const url = new window.URL(window.location.href); ['room', 'token'].forEach((k) => url.searchParams.delete(k));"
    "const box = this.nextElementSibling, done = () => { this.textContent = this.dataset.done };"
    "box.value = url.href;"
    "const show = () => { box.hidden = false; box.focus(); box.select();"
    " try { if (document.execCommand('copy')) done() } catch (e) {} };"
    "navigator.clipboard ? navigator.clipboard.writeText(url.href).then(done, show) : show()")


def qr_svg(url: str) -> str:
    """The QR code of ``url`` as an inline SVG element, drawn locally by segno."""
    return segno.make(url, error="m").svg_inline(scale=5, border=2, title="QR code of the join link")


def _arg(name: str) -> str | None:
    values = pn.state.session_args.get(name) if pn.state.curdoc and pn.state.curdoc.session_context else None
    return values[0].decode(errors="replace") if values else None


def _copy_lesson_button(tr) -> str:
    """The presenter card's "Copy this lesson's link" and the box that shows the link where it cannot be copied."""
    copy, done, name = tr._("Copy this lesson's link"), tr._("Link copied"), tr._("This lesson's link")
    return (f'<button type="button" class="lesson-copy" data-done="{escape(done, quote=True)}" '
            f'onclick="{escape(COPY_LESSON, quote=True)}">{escape(copy)}</button>'
            f'<input class="lesson-link" readonly hidden aria-label="{escape(name, quote=True)}">')


def reach_html(reach: ClassAddress, tr) -> str:
    """What the join link's address means for a class (``.room-reach``): nothing where the page was opened at an
    address the class shares; else which of this machine's addresses the link uses instead, or what to set to serve
    the class (server/network.py, docs/operations.md)."""
    if not reach.problem and not reach.replaced:
        return ""
    host = reach.host
    if not reach.problem:
        text = tr._("To each student {host} would be their own device: the link uses this computer's address on the "
                    "network, {address}.", host=host, address=reach.addresses[0])
        if reach.addresses[1:]:
            text += " " + tr._("Its other addresses: {addresses}.", addresses=tr.list_sep.join(reach.addresses[1:]))
        return f'<p class="room-reach">{escape(text)}</p>'
    settings = f"ADDRESS=0.0.0.0 BOKEH_ALLOW_WS_ORIGIN={','.join(reach.addresses)}"
    url = f"{urlsplit(reach.url).scheme or 'http'}://{reach.addresses[0]}/" if reach.addresses else ""
    if reach.problem == "loopback":
        how = tr._("This server listens on this computer only. Start it with {settings} and present from {url}.",
                   settings="\0", url=url)
    elif reach.problem == "origin":
        how = tr._("This server refuses pages opened at this computer's network address. Start it with {settings} "
                   "and present from {url}.", settings="\0", url=url)
    else:
        how = tr._("This computer has no network address. Connect it to your class's network, then start the server "
                   "with {settings} and present from its address.", settings="\0")
        settings = f"ADDRESS=0.0.0.0 BOKEH_ALLOW_WS_ORIGIN=…:{urlsplit(reach.url).port or 80}"
    # the problem in a line, how to serve the class a click away: the bar stays short on a projector
    return ('<details class="room-reach room-reach-problem"><summary>'
            + escape(tr._("Your class cannot reach {host}: to each student it is their own device.", host=host))
            + f' <span class="room-how">{escape(tr._("How to serve your class"))}</span></summary><p>'
            + escape(how).replace("\0", f"<code>{escape(settings)}</code>") + "</p></details>")


class RoomControls(pn.viewable.Viewer):
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

        tr = self.state.tr
        self._present = pn.widgets.Button(label=tr._("Present"), color="primary", margin=(6, 8),
                                          description=tr._("Let a class follow this page live"))
        self._present.on_click(self._on_present)
        # escaped: a notice can name what a link carried
        self._notice = pn.pane.HTML(pn.bind(lambda text, lang: f"<p>{escape(translator(lang)(text))}</p>",
                                            self.param.notice, self.state.param.lang),
                                    css_classes=["room-notice"], stylesheets=[ROOM_CSS], width=260, margin=(6, 8),
                                    visible=self.param.notice.rx.bool())
        # a row: the controls sit at the end of the page's header
        self._layout = pn.Row(self._present, self._notice, margin=0)
        #: A presenter's room, above the tabs (app.py): empty and hidden on every other page.
        self.bar = pn.Column(css_classes=["room-bar"], stylesheets=[ROOM_CSS], sizing_mode="stretch_width",
                             margin=0, visible=False)
        self._folded = False  # the presenter has folded the bar to its code

        self._watcher = self.state.param.watch(self._on_state_change, list(AttentionState.SHARED_PARAMS))
        self.state.param.watch(self._relabel, "lang")
        if self.browser is not None:  # the join link is made of the page's address, which the browser reports
            self.browser.param.watch(lambda _: self.role == "presenter" and self._show_presenter(), "page_address")
        if ctx is not None:
            self._doc.on_session_destroyed(self._on_destroyed)
            self._doc.on_event(ConnectionLost, self._on_connection_lost)
            self._registry.start_sweeping()
        self._enter(_arg("room"), _arg("token"))

    def _relabel(self, *_):
        tr = self.state.tr
        self._present.param.update(label=tr._("Present"), description=tr._("Let a class follow this page live"))
        built = self.__dict__  # the cached controls this page has made
        if "_stop" in built:
            self._stop.param.update(label=tr._("Stop presenting"), description=tr._("End the room now"))
        if "_qr_toggle" in built:
            self._qr_toggle.label = tr._("QR code")
        if "_fold" in built:
            self._label_fold()
        if "_poll_toggle" in built:
            self._poll_toggle.label = tr._("Class poll")
        if self._poll is not None:
            self._poll.relabel()
        if self.role == "presenter" and self._token:
            self._show_presenter()
        elif self.role == "follower":
            if self._registry.get(self.code):
                self._show_follower()
            else:
                self._card.object = self._followed_card()

    def _followed_card(self) -> str:
        return (f'<div class="room-label">{escape(self.state.tr._("Followed room"))}</div>'
                f'<div class="room-code">{self._pretty_code()}</div>')

    # The controls of a presenter or a follower, made the first time the page is one: most pages never are,
    # and every Panel widget costs the server time to build the page.

    @cached_property
    def _stop(self) -> pn.widgets.Button:
        tr = self.state.tr
        stop = pn.widgets.Button(label=tr._("Stop presenting"), margin=(6, 8), description=tr._("End the room now"))
        stop.on_click(self._on_stop)
        return stop

    @cached_property
    def _qr_toggle(self) -> pn.widgets.Toggle:
        return pn.widgets.Toggle(label=self.state.tr._("QR code"), value=False, margin=(6, 8))

    @cached_property
    def _qr(self) -> pn.pane.HTML:
        return pn.pane.HTML("", css_classes=["room-qr"], stylesheets=[ROOM_CSS], width=190, margin=(0, 5),
                            visible=self._qr_toggle.param.value)

    @cached_property
    def _poll_toggle(self) -> pn.widgets.Toggle:
        toggle = pn.widgets.Toggle(label=self.state.tr._("Class poll"), value=False, margin=(6, 8))
        toggle.param.watch(self._on_poll_toggle, "value")
        return toggle

    @cached_property
    def _toggle(self) -> pn.widgets.Button:
        toggle = pn.widgets.Button(label=self.state.tr._("Explore on my own"), margin=(6, 8))
        toggle.on_click(self._on_toggle)
        return toggle

    @cached_property
    def _card(self) -> pn.pane.HTML:
        return pn.pane.HTML("", css_classes=["room-card"], stylesheets=[ROOM_CSS], width=200, margin=(2, 8))

    @cached_property
    def _code_card(self) -> pn.pane.HTML:
        """The presenter's room code, large, at the bar's start."""
        return pn.pane.HTML("", css_classes=["room-card", "room-bar-code"], stylesheets=[ROOM_CSS], margin=(2, 8))

    @cached_property
    def _join_pane(self) -> pn.pane.HTML:
        """The join link on one line, what its address means for a class, the lesson's link, the token's life."""
        return pn.pane.HTML("", css_classes=["room-join"], stylesheets=[ROOM_CSS], sizing_mode="stretch_width",
                            margin=(0, 8))

    @cached_property
    def _fold(self) -> pn.widgets.Button:
        fold = pn.widgets.Button(margin=(6, 8), css_classes=["room-fold"])
        fold.on_click(self._on_fold)
        return fold

    @cached_property
    def _buttons(self) -> pn.Row:
        """QR code, Class poll and Stop presenting: beside the code where the bar is wide enough, folded with the
        join link."""
        return pn.Row(self._qr_toggle, self._poll_toggle, self._stop, self._qr, margin=0, css_classes=["room-buttons"],
                      stylesheets=[ROOM_CSS])

    def _label_fold(self) -> None:
        # no tooltip: Bokeh's, drawn beside a button whose label has just changed width, covered the button itself
        self._fold.label = self.state.tr._("Join link ▾") if self._folded else self.state.tr._("Fold ▴")

    def _on_fold(self, _event) -> None:
        self._folded = not self._folded
        self._buttons.visible = self._join_pane.visible = not self._folded
        self._label_fold()

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

    def _on_present(self, _event) -> None:
        try:
            # one running room per page: pressing again gives the same room back (server/rooms.py)
            room, token = self._registry.create(self.state.snapshot(), creator=self._session)
        except TooManyRooms:
            self.notice = N_("This page has started several rooms in the last minute. Wait a minute, then press "
                             "Present again.")
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
            self._layout[:] = [self._present, self._notice]
            self.bar.visible = False

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

    def _show_presenter(self) -> None:
        served = self._doc is not None and self._doc.session_context is not None
        if served and self.browser is not None and not self.browser.page_address:
            return  # the join link is made of the page's address: drawn when the browser reports it (the watcher)
        reach = self._reach()
        link = f"{reach.url}?room={quote(self.code)}"
        tr = self.state.tr
        self._code_card.object = (
            f'<div class="room-label">{escape(tr._("Presenting · room"))}</div><div class="room-code" '
            f'aria-label="{escape(tr._("Room code {code}", code=self.code))}">{self._pretty_code()}</div>')
        self._join_pane.object = (
            # one line, never broken (a link read across two lines is misread); it scrolls where it is too long
            f'<div class="room-link-box"><span class="room-label">{escape(tr._("Join at"))}</span> '
            f'<a class="room-link" href="{escape(link)}">{escape(link)}</a></div>'
            + reach_html(reach, tr)
            + '<div class="room-more">' + _copy_lesson_button(tr)
            # without EXPLORER_ROOM_SECRET the server signs presenter links with a key drawn at its start
            + ('' if self._registry.secret.persistent else
               '<span class="room-label room-lasts">'
               f'{escape(tr._("Your presenter link lasts until the server restarts"))}</span>') + '</div>')
        self._qr.object = qr_svg(link)
        # laid out once (the bar is drawn again when the page's address arrives, and new rows each time would be
        # new models)
        if not self.bar.objects:
            self._label_fold()
            self.bar[:] = [pn.Row(self._code_card, self._fold, self._buttons, margin=0, css_classes=["room-bar-line"],
                                  stylesheets=[ROOM_CSS]), self._join_pane]
        self.bar.visible = True
        if self._layout.objects != [self._notice]:
            self._layout[:] = [self._notice]
        if self._poll is None and self._registry.poll(self.code) is not None:
            self._poll_toggle.value = True  # a presenter who reloads finds the room's poll on the projector again

    def _on_poll_toggle(self, event) -> None:
        """The presenter's "Class poll": the card is made the first time, then shown or hidden."""
        if self.role != "presenter" or not self._token:
            return
        if self._poll is None and event.new:
            self._poll = PresenterPoll(self._registry, self.code, self._token, self._session,
                                       tr=lambda: self.state.tr)
            self.bar.append(self._poll.__panel__())  # a card over the page's corner (static/poll.css)
        if self._poll is not None:
            self._poll.__panel__().visible = event.new

    def _drop_poll(self) -> None:
        """The room has ended for this page: its poll card goes, and stops watching."""
        poll, self._poll = self._poll, None
        if poll is None:
            return
        poll.close()
        if isinstance(poll, PresenterPoll):
            self.bar.remove(poll.__panel__())
            self._poll_toggle.value = False

    def _pretty_code(self) -> str:
        """The code as the class reads it: two groups of three."""
        return escape(f"{self.code[:3]} {self.code[3:]}")

    def _on_stop(self, _event) -> None:
        self._registry.end(self.code, self._token)
        self._drop_poll()
        self._token = None
        self._set_role("alone", "")
        self.notice = N_("The room has ended; followers keep their last view.")
        self._layout[:] = [self._present, self._notice]
        self.bar.visible = False

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
        self._card.object = self._followed_card()
        self._layout[:] = [self._card, self._notice]

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
    def _show_follower(self) -> None:
        self._sync_live()
        if self.role != "follower" or not self._registry.get(self.code):
            return
        code, tr = self._pretty_code(), self.state.tr
        if self.following:
            self._card.object = (f'<div class="room-label">{escape(tr._("Following room"))}</div>'
                                 f'<div class="room-code">{code}</div>')
            self._toggle.param.update(label=tr._("Explore on my own"),
                                      description=tr._("Stop following; your changes stay on your page"))
        else:
            self._card.object = (f'<div class="room-label">{escape(tr._("Exploring on your own · room"))}</div>'
                                 f'<div class="room-code">{code}</div>')
            self._toggle.param.update(label=tr._("Follow again"), description=tr._("Take the presenter's view again"))
        poll = [self._poll.__panel__()] if isinstance(self._poll, FollowerPoll) and self._poll.built else []
        laid_out = [self._card, self._toggle, self._notice, *poll]
        if self._layout.objects != laid_out:  # called several times as a page joins: the header is laid out once
            self._layout[:] = laid_out

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

    def __panel__(self):
        return self._layout
