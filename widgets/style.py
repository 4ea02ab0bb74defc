"""Projector mode and light/dark themes: page CSS, and the Bokeh figures restyled in place.

HTML parts of the page follow CSS custom properties (``--ae-*``) that
``static/theme.css`` declares on the document root for each
``data-mode`` / ``data-theme``; the browser bridge sets those attributes.
Canvas text and marks cannot follow CSS, so :class:`FigureStyler` sets the
Bokeh models' own properties whenever the state's mode or theme changes: the
figures are never rebuilt, only their properties change.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import panel
import param
from bokeh.core.property.vectorization import Value
from bokeh.models import ColorBar, Interpolator, LinearInterpolator, Plot, Text
from panel.models.katex import KATEX_VERSION
from panel.theme import Design
from panel.theme.base import Inherit
from panel.viewable import Viewable

from services.katex_fonts import KATEX_FONTS, KATEX_FONTS_VERSION  # noqa: F401  (a notebook inlines them)
from session.state import AttentionState

#: Okabe & Ito (2008) colour-blind-safe palette, ordered for contrast on white.
TOKEN_COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")


def token_color(i: int) -> str:
    """The colour of token ``i`` in every plot, chart and table of the page."""
    return TOKEN_COLORS[i % len(TOKEN_COLORS)]


STATIC = Path(__file__).resolve().parents[1] / "static"
#: Document-level CSS: the custom properties per mode and theme, the page frame.
PAGE_CSS = (STATIC / "theme.css").read_text()
#: Loaded into every Panel component's shadow root: maps Panel's and Bokeh's own variables onto ours.
COMPONENT_CSS = (STATIC / "components.css").read_text()
#: The page's own panes and layouts (header, notices, step-through, help).
APP_CSS = (STATIC / "app.css").read_text()


#: The katex.min.css that Panel bundles and loads into the document.
KATEX_STYLESHEET = (Path(panel.__file__).parent / "dist" / "bundled" / "katex" / f"katex@{KATEX_VERSION}" / "dist"
                    / "katex.min.css")


def _katex_css() -> str:
    """KaTeX's own layout rules, for a LaTeX pane's shadow root, and its HTML output shown.

    Panel loads katex.min.css into the document only and shows KaTeX's MathML inside the pane; Chromium's
    MathML ignores ``columnalign``, so an ``aligned`` block's equals signs do not line up. The fonts stay the
    document's (a shadow root's ``@font-face`` is not used), so those rules are left out. Each KaTeX font family
    is named through a custom property, ``var(--ae-KaTeX_Main, KaTeX_Main)``: unset (a served page), KaTeX's own;
    a notebook sets them to fonts of its own (:func:`katex_fonts_inline_css`).
    """
    css = re.sub(r"KaTeX_[A-Za-z0-9]+", lambda m: f"var(--ae-{m.group(0)},{m.group(0)})",
                 re.sub(r"@font-face\{[^}]*\}", "", KATEX_STYLESHEET.read_text()))
    # a script (the i of s_i, the k of d_k) is 0.7 of its formula, 0.5 in a script's script: on a projector
    # --ae-script-min (static/theme.css) keeps them at the 20 px the back of the room can read
    scripts = "".join(f".katex .sizing.reset-size6.size{n}{{font-size:max({f}em,var(--ae-script-min,0px))}}"
                      for n, f in ((3, 0.7), (1, 0.5)))
    # mathematics is written left to right in a right-to-left page too (an Arabic page's formulas came out mirrored)
    return css + "span.katex-html { display: inline; } .katex { direction: ltr; }" + scripts


#: KaTeX's layout, for each LaTeX pane (see :func:`_katex_css`).
KATEX_CSS = _katex_css()


#: A notebook's names for KaTeX's font families (KaTeX_Main-inline for KaTeX_Main).
INLINE_FAMILY = "{}-inline"


def katex_fonts_inline_css() -> str:
    """KaTeX's fonts inside a document-level stylesheet, as ``data:`` URLs, for a notebook.

    A notebook's output inlines katex.min.css, whose ``url(fonts/…)`` then points next to the notebook, where no
    font is. Rules of the same family and descriptors placed after KaTeX's do not keep the browser from them:
    Chromium still asks KaTeX's for a glyph the first lacks. So each of KaTeX's ``@font-face`` rules is kept
    (weight, style) under a family of its own (:data:`INLINE_FAMILY`), its ``src`` the woff2 file itself,
    and the custom properties that :func:`_katex_css` names the families by point the
    formulas at them: nothing asks for KaTeX's own families any more.
    """
    css = KATEX_STYLESHEET.read_text()
    families = sorted(set(re.findall(r"font-family:(KaTeX_[A-Za-z0-9]+)", css)))

    def inline(rule: re.Match) -> str:
        name = re.search(r"url\(fonts/(KaTeX_[A-Za-z0-9_-]+)\.woff2\)", rule.group(0)).group(1)
        data = base64.b64encode((KATEX_FONTS / f"{name}.woff2").read_bytes()).decode("ascii")
        face = re.sub(r"src:[^;}]*", f'src:url(data:font/woff2;base64,{data}) format("woff2")', rule.group(0))
        return re.sub(r"font-family:(KaTeX_[A-Za-z0-9]+)", lambda m: "font-family:" + INLINE_FAMILY.format(m.group(1)),
                      face)

    names = "".join(f"--ae-{family}:{INLINE_FAMILY.format(family)};" for family in families)
    return ":root{" + names + "}" + "".join(inline(rule) for rule in re.finditer(r"@font-face\{[^}]*\}", css))

#: Where a served page finds KaTeX's fonts (server/katex_fonts.py serves them there), relative to the page as Panel's
#: own scripts are: the very files katex.min.css names, so a page that loads it later fetches none twice.
KATEX_FONTS_URL = f"static/extensions/panel/bundled/katex/katex@{KATEX_VERSION}/dist/fonts/"


def katex_fonts_css() -> str:
    """KaTeX's ``@font-face`` rules for a served page's document, each its woff2 file at :data:`KATEX_FONTS_URL`.

    A formula the page draws from KaTeX's kept HTML (the step-through's recipe, widgets/stepper.py) is shown before
    KaTeX's script and stylesheet are loaded, which Panel does only for the first LaTeX pane; its fonts are
    fetched as a formula asks for them, not with the page.
    """
    def woff2_only(rule: re.Match) -> str:
        name = re.search(r"url\(fonts/(KaTeX_[A-Za-z0-9_-]+)\.woff2\)", rule.group(0)).group(1)
        return re.sub(r"src:[^;}]*", f'src:url({KATEX_FONTS_URL}{name}.woff2) format("woff2")', rule.group(0))

    return "".join(woff2_only(rule) for rule in re.finditer(r"@font-face\{[^}]*\}", KATEX_STYLESHEET.read_text()))


#: KaTeX's fonts for a served page's document (see :func:`katex_fonts_css`), made once per process.
KATEX_FONTS_CSS = katex_fonts_css()


#: Colours of each theme. Text on the background has contrast >= 7:1 (WCAG AAA) in both.
PALETTES = {
    "light": dict(bg="#ffffff", fg="#111111", muted="#3d3d3d", grid="#d9d9d9", outline="#8c8c8c",
                  cell_line="#ffffff", neutral="#c8c8c8"),
    "dark": dict(bg="#121212", fg="#f2f2f2", muted="#cfcfcf", grid="#3b3b3b", outline="#8c8c8c",
                 cell_line="#121212", neutral="#4a4a4a"),
}
#: A refused number box: Bokeh's own input variables, red border (focused too), light background, and the light
#: colour scheme for its text in both themes (the dark one draws a box's text white).
#: Set in the box's inline ``styles``, never as a CSS class: BokehJS lays the page out anew for a changed
#: class, which scrolled the shown tab back to its top, away from the box just refused (a style it applies in
#: place).
INVALID_STYLES = {"--border-color": "#b00020", "--focus-border-color": "#b00020", "--border-width": "2px",
                  "--background-color": "#fff4f4", "color-scheme": "light"}


def mark_invalid(box, invalid: bool = True) -> None:
    """Mark a number box (a Bokeh ``TextInput`` or a Panel one) as refused, or clear the mark; a no-op when
    it already shows that. (BokehJS removes an inline style only when its value is ``None``.)"""
    # The views clear the mark on every box they redraw (nineteen at a Projections release): a box this never
    # marked is left without reading its styles, a Bokeh property read each
    if not invalid and not getattr(box, "_marked_invalid", False):
        return
    box._marked_invalid = invalid
    if is_marked_invalid(box) == invalid:
        return
    rest = {k: v for k, v in dict(box.styles).items() if k not in INVALID_STYLES}
    box.styles = {**rest, **(INVALID_STYLES if invalid else dict.fromkeys(INVALID_STYLES))}


def is_marked_invalid(box) -> bool:
    """Whether :func:`mark_invalid` marked ``box``."""
    return all(box.styles.get(k) == v for k, v in INVALID_STYLES.items())


#: Smallest canvas text in projector mode (CSS px), and how much every size grows.
PROJECTOR_MIN_FONT = 20
PROJECTOR_FONT_STEP = 6
PROJECTOR_MIN_BORDER = 44
#: Weight-width lines of the query plot: widths 1..14 become 4..20 in projector mode.
PROJECTOR_LINE_WIDTHS = ((1, 14), (4, 20))


class ClassroomDesign(Design):
    """Panel's default look, plus :data:`COMPONENT_CSS` in every component, so themes switch without a rebuild."""

    modifiers = {Viewable: {"stylesheets": [Inherit, COMPONENT_CSS]}}


def _px(size) -> float | None:
    if isinstance(size, Value):
        size = size.value
    elif isinstance(size, dict):
        size = size.get("value")
    m = re.fullmatch(r"\s*([\d.]+)px\s*", str(size)) if size is not None else None
    return float(m.group(1)) if m else None


def _left_to_right(figures) -> None:
    # a plot is mathematics: in a right-to-left page its canvas would write "−1" as "1−"
    for fig in figures:
        fig.styles = {**fig.styles, "direction": "ltr"}


class FigureStyler(param.Parameterized):
    """Restyles Bokeh figures for the state's ``mode`` and ``theme`` by setting model properties.

    The properties each figure was built with are remembered before the first
    restyle and restored in normal mode, so the views stay the authority on their own
    normal look. Projector mode: canvas text grows by 6 px to at least 20 px,
    markers by 40 %, lines and axes thicken, and every text is drawn in the
    theme's foreground colour (token colours stay on markers, bars and lines,
    where 3:1 is the contrast that applies). Text drawn on heatmap cells gets a
    background box, so its contrast does not depend on the cell's colour.
    """

    state = param.ClassSelector(class_=AttentionState, doc="The session state whose mode and theme apply.")
    figures = param.List(item_type=Plot, doc="The figures to restyle.")

    def __init__(self, **params):
        super().__init__(**params)
        # model id -> (model, built values); None until the first restyle. Walking every model of every
        # figure took about a third of building a page, and most pages never leave the plain look.
        self._original: dict[str, tuple[object, dict[str, object]]] | None = None
        self._interp = LinearInterpolator(x=list(PROJECTOR_LINE_WIDTHS[0]), y=list(PROJECTOR_LINE_WIDTHS[1]),
                                          clip=False)
        _left_to_right(self.figures)
        self._min_border = {fig.id: fig.min_border_bottom for fig in self.figures}
        self.state.param.watch(self.apply, ["mode", "theme"])
        self.apply()

    def add(self, figures: list[Plot]) -> None:
        """Restyle ``figures`` too, from now on (views built after the page, e.g. a tab's when first shown)."""
        _left_to_right(figures)
        self._min_border.update({fig.id: fig.min_border_bottom for fig in figures})
        self.figures = [*self.figures, *figures]
        added = {} if self._original is None else self._remember(figures)
        if self._original is not None:
            self._original.update(added)
        self._restyle(added, figures)  # the figures already styled keep their look

    def _remember(self, figures: list[Plot] | None = None) -> dict[str, tuple[object, dict[str, object]]]:
        original = {}
        for fig in self.figures if figures is None else figures:
            for model in fig.references():
                built = {name: getattr(model, name) for name in model.properties_with_values(include_defaults=True)
                         if self._styled(name)}
                if built:
                    original[model.id] = (model, built)
        return original

    @staticmethod
    def _styled(name: str) -> bool:
        return (name.endswith(("_font_size", "_color", "line_width")) or name in ("size",)) and not name.startswith(
            ("hover_", "selection_", "nonselection_", "muted_"))

    def _orig(self, model, name):
        return self._original[model.id][1].get(name)

    def apply(self, *_):
        """Set every remembered property for the current mode and theme (one held document change)."""
        if self._original is None and (self.state.mode == "projector" or self.state.theme != "light"):
            self._original = self._remember()
        self._restyle(self._original or {}, self.figures)

    def _restyle(self, original: dict[str, tuple[object, dict[str, object]]], figures: list[Plot]) -> None:
        projector = self.state.mode == "projector"
        theme = self.state.theme
        pal = PALETTES[theme]
        plain = not projector and theme == "light"  # the figures' own look
        for model, built in original.values():
            updates = {name: self._value(model, name, orig, projector, plain, pal) for name, orig in built.items()}
            updates = {k: v for k, v in updates.items() if v is not _KEEP}
            if updates:
                model.update(**updates)
        for fig in figures:
            # Bokeh sizes the bottom axis a little short for 20 px labels: leave them room
            fig.update(background_fill_color=pal["bg"], border_fill_color=pal["bg"],
                       min_border_bottom=PROJECTOR_MIN_BORDER if projector else self._min_border[fig.id])

    def _value(self, model, name, orig, projector, plain, pal):
        is_text_glyph = isinstance(model, Text)
        if name.endswith("_font_size"):
            size = _px(orig)
            if not projector or size is None:
                return orig
            return f"{max(PROJECTOR_MIN_FONT, size + PROJECTOR_FONT_STEP):g}px"
        if name == "size":  # scatter markers
            return orig * 1.4 if projector and isinstance(orig, (int, float)) else orig
        if name.endswith("line_width"):
            if isinstance(orig, str):  # a field: the query plot's weight-width lines
                return dict(field=orig, transform=self._interp) if projector else orig
            if isinstance(orig, dict) and isinstance(orig.get("transform"), Interpolator):
                return orig
            if isinstance(orig, (int, float)) and name not in ("border_line_width", "grid_line_width",
                                                               "minor_tick_line_width"):
                return orig + 2 if projector and orig > 0 else orig
            return orig
        if name.endswith("text_color"):
            if is_text_glyph and orig == "text_color":  # numbers on heatmap cells: ink chosen per cell
                return pal["fg"] if projector else orig
            return orig if plain else pal["fg"]
        if is_text_glyph and name == "background_fill_color":
            on_cells = self._orig(model, "text_color") == "text_color"
            return pal["bg"] if projector and on_cells else orig
        if is_text_glyph and name == "border_line_color":
            return orig
        if name in ("axis_line_color", "major_tick_line_color", "minor_tick_line_color", "bar_line_color"):
            return orig if plain or orig is None else pal["muted"]
        if name == "grid_line_color":
            return orig if plain or orig is None else pal["grid"]
        if name == "outline_line_color":
            return orig if plain or orig is None else pal["outline"]
        if isinstance(model, ColorBar) and name in ("background_fill_color", "border_line_color"):
            return pal["bg"] if name == "background_fill_color" else orig
        if name in ("fill_color", "line_color", "color") and isinstance(orig, str):
            # constant black/white ink (the query marker, the output triangle, cell borders) follows the theme
            if orig.lower() in ("black", "#000000", "#444444", "#333333"):
                return orig if plain else pal["fg"]
            if orig.lower() in ("white", "#ffffff"):
                return orig if plain else pal["bg"]
        return _KEEP


_KEEP = object()
