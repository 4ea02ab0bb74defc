"""What a page shows of its room: the "Present" button and the notices in the header, a presenter's room bar
(the code, the join link and what its address means for a class, the QR code, the poll, Stop, folded to the code),
and a follower's card and its "Explore on my own" / "Follow again".

:class:`RoomView` is the view half of :class:`widgets.room.RoomControls`, which holds the page's role in its room
(alone, presenter, follower) and moves between them; the view draws that role and hands a press of a button to it.
"""

from __future__ import annotations

from functools import cached_property
from html import escape
from pathlib import Path
from urllib.parse import quote, urlsplit

import panel as pn
import segno

from services.network import ClassAddress
from session.i18n import translator
from widgets.poll import FollowerPoll, PresenterPoll

ROOM_CSS = (Path(__file__).parent.parent / "static" / "room.css").read_text()
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


def _copy_lesson_button(tr) -> str:
    """The presenter card's "Copy this lesson's link" and the box that shows the link where it cannot be copied."""
    copy, done, name = tr._("Copy this lesson's link"), tr._("Link copied"), tr._("This lesson's link")
    return (f'<button type="button" class="lesson-copy" data-done="{escape(done, quote=True)}" '
            f'onclick="{escape(COPY_LESSON, quote=True)}">{escape(copy)}</button>'
            f'<input class="lesson-link" readonly hidden aria-label="{escape(name, quote=True)}">')


def reach_html(reach: ClassAddress, tr) -> str:
    """What the join link's address means for a class (``.room-reach``): nothing where the page was opened at an
    address the class shares; else which of this machine's addresses the link uses instead, or what to set to serve
    the class (services/network.py, docs/operations.md)."""
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


class RoomView:
    """The page's room as the page draws it: built by :meth:`_build_view`, laid out by role (:meth:`_show_alone`,
    :meth:`_show_presenter`, :meth:`_show_follower`, :meth:`_show_ended`). A mixin of
    :class:`~widgets.room.RoomControls`, whose role, code, notice and registry it draws.
    """

    def _build_view(self) -> None:
        tr = self.state.tr
        self._present = pn.widgets.Button(label=tr._("Present"), color="primary", margin=(6, 8),
                                          description=tr._("Let a class follow this page live"))
        self._present.on_click(self._on_present)
        # a row: the controls sit at the end of the page's header; the notice joins them with the page's first
        self._layout = pn.Row(self._present, margin=0)
        self.param.watch(self._place_notice, "notice")
        self._place_bar = lambda bar: None  # where the bar goes in the page (bar_goes)
        self._folded = False  # the presenter has folded the bar to its code

    @cached_property
    def bar(self) -> pn.Column:
        """A presenter's room, which the page puts above the tabs (:meth:`bar_goes`): made the first time the page
        presents (most pages never do), then kept, hidden whenever the page does not present."""
        bar = pn.Column(css_classes=["room-bar"], stylesheets=[ROOM_CSS], sizing_mode="stretch_width", margin=0,
                        visible=False)
        self._place_bar(bar)
        return bar

    def bar_goes(self, place) -> None:
        """Where :attr:`bar` goes in the page: ``place(bar)``, called once the bar is made (now, if it is)."""
        self._place_bar = place
        if "bar" in self.__dict__:
            place(self.bar)

    @cached_property
    def _notice(self) -> pn.pane.HTML:
        """The room's notice (``.room-notice``), made the first time the page has one: most pages never do, and the
        pane, bound to the notice and the language, was a Panel object and three Bokeh models of every page's
        build. Hidden again, not removed, when the notice is cleared."""
        # escaped: a notice can name what a link carried
        return pn.pane.HTML(pn.bind(lambda text, lang: f"<p>{escape(translator(lang)(text))}</p>",
                                    self.param.notice, self.state.param.lang),
                            css_classes=["room-notice"], stylesheets=[ROOM_CSS], width=260, margin=(6, 8),
                            visible=self.param.notice.rx.bool())

    def _notices(self) -> list[pn.pane.HTML]:
        """The notice's pane, where the page has had a notice (each role's layout puts it in its place)."""
        return [self._notice] if "_notice" in self.__dict__ else []

    def _place_notice(self, event) -> None:
        """The page's first notice: its pane where every layout has it, after the controls and before a poll."""
        if not event.new or "_notice" in self.__dict__:
            return
        poll = self._poll.__panel__() if isinstance(self._poll, FollowerPoll) and self._poll.built else None
        objects = self._layout.objects
        self._layout.insert(next((i for i, o in enumerate(objects) if o is poll), len(objects)), self._notice)

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
        if self._layout.objects != self._notices():
            self._layout[:] = self._notices()
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

    def _show_alone(self) -> None:
        """The page presents nothing and follows nothing: the Present button and the notice."""
        self._layout[:] = [self._present, *self._notices()]
        if "bar" in self.__dict__:
            self.bar.visible = False

    def _show_ended(self) -> None:
        """The followed room has ended: its code and the notice."""
        self._card.object = self._followed_card()
        self._layout[:] = [self._card, *self._notices()]

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
        laid_out = [self._card, self._toggle, *self._notices(), *poll]
        if self._layout.objects != laid_out:  # called several times as a page joins: the header is laid out once
            self._layout[:] = laid_out

    def __panel__(self):
        return self._layout
