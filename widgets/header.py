"""The page's header and notices: its title, Full screen, the language menu, Reset, the Projector and Dark looks,
and under them what the page's address or the last input had refused."""

from __future__ import annotations

from html import escape

import panel as pn
import param

from session.i18n import N_, menu_languages, translator
from session.state import AttentionState
from widgets.base import View
from widgets.style import APP_CSS

#: The header's two looks, by the value the state's watcher reads.
LOOKS = (N_("Projector"), N_("Dark"))


def looks_of(state: AttentionState) -> list[str]:
    """The looks ``state`` has on, as the header's boxes name them."""
    return ["Projector"] * (state.mode == "projector") + ["Dark"] * (state.theme == "dark")


def title_html(lang: str) -> str:
    """The title, the Full screen button (the browser's own fullscreen API, no server) and the language menu."""
    tr = translator(lang)
    return (f"<h1>{tr._('Attention Explorer')}</h1><button type='button' class='fullscreen' "
            f"title='{escape(tr._('Fill the whole screen (Esc leaves)'), quote=True)}' "
            "onclick='document.fullscreenElement ? document.exitFullscreen() : "
            f"document.documentElement.requestFullscreen().catch(() => {{}})'>"
            # the sign drawn, not a character: no font on a classroom's machine may have ⛶ (it came out as a box)
            "<svg class='icon' viewBox='0 0 16 16' aria-hidden='true'><path d='M1 6V1h5M10 1h5v5M15 10v5h-5M6 15H1v-5' "
            "fill='none' stroke='currentColor' stroke-width='2'/></svg>"
            f"<span class='words'>{tr._('Full screen')}</span></button>" + language_menu(lang))


def language_menu(lang: str) -> str:
    """The page's one language menu, each language named as it names itself: a plain ``<select>`` in the title's
    pane, not a widget (a widget was two more models to build and send for every page); its choice reaches the
    server through the page's bridge (link/browser.py: the ``ae-language`` event, the message ``{"lang"}``).
    Its name is the page's word for "Language"; a learner who cannot read it still hears each choice in its own
    language."""
    options = "".join(f"<option value='{code}'{' selected' if code == lang else ''}>{escape(name)}</option>"
                      for code, name in menu_languages().items())
    label = escape(translator(lang)._("Language"), quote=True)
    return (f"<span class='language-menu'><select aria-label='{label}' title='{label}' "
            "onchange=\"this.dispatchEvent(new CustomEvent('ae-language', "
            "{detail: this.value, bubbles: true, composed: true}))\">" + options + "</select></span>")


class Header(View):
    """The page's header: title, Full screen and language menu in one pane, then Reset, the looks, ``extra``."""

    extra = param.List(default=[], doc="Views at the header's end (Present / follow a room, on a served page).")

    def __init__(self, **params):
        super().__init__(**params)
        state = self.state
        self.reset = pn.widgets.Button(color="primary", margin=(6, 8))
        self.reset.on_click(lambda _: state.reset())
        # CheckBoxGroup, not Checkbox: its boxes are wrapped in <label>s, so each has an accessible name
        # a lesson link's simple header leaves them out (session/lesson.py says why)
        self.looks = pn.widgets.CheckBoxGroup(inline=True, margin=(10, 8),
                                              visible=pn.bind(lambda header: header != "simple", state.param.header))
        self.looks.param.watch(lambda e: state.param.update(mode="projector" if "Projector" in e.new else "normal",
                                                            theme="dark" if "Dark" in e.new else "light"), "value")
        # one call per batch
        state.param.watch(lambda *_: setattr(self.looks, "value", looks_of(state)), ["mode", "theme"])
        # the title and the full-screen button in one pane: the button only runs the browser's own fullscreen API
        title = pn.pane.HTML(pn.bind(title_html, state.param.lang), css_classes=["app-title"], stylesheets=[APP_CSS],
                             sizing_mode="stretch_width", margin=(0, 10))
        self._layout = pn.Row(title, self.reset, self.looks, *self.extra, sizing_mode="stretch_width",
                              css_classes=["app-header"], stylesheets=[APP_CSS])
        self.render_on("lang")

    def _render(self, *_):
        tr = self.state.tr
        self.reset.param.update(label=tr._("Reset example"), description=tr._("Restore q = q_love (R)"))
        self.looks.param.update(options=tr.options(LOOKS), value=looks_of(self.state))


def notices_html(notice: str, message: str, lang: str) -> str:
    """The address's notice and the last refusal, as escaped paragraphs (both can quote what a user typed)."""
    tr = translator(lang)
    return "".join(f"<p class='{kind}' role='status'>{escape(tr(text))}</p>"
                   for kind, text in (("notice", notice), ("message", message)) if text)


class Notices(View):
    """Which parts of the page's address were ignored, and why the last input was refused, under the header.

    Both can quote what a user typed (a link, a field): always escaped, never HTML (``pn.pane.Str`` is not).
    Always in the page, empty (no height) when there is nothing to say: a pane shown or hidden makes BokehJS
    lay the page out anew, which scrolled the shown tab back to its top, away from the box just refused.
    """

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        self._layout = pn.pane.HTML(pn.bind(notices_html, s.param.notice, s.param.message, s.param.lang),
                                    css_classes=["notice"], stylesheets=[APP_CSS], sizing_mode="stretch_width",
                                    margin=0)
