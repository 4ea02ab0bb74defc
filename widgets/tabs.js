// Run when a tab's title is tapped (widgets/tabs.py: the tabs' `active`), with `source` the tabs' model.
//
// On a phone or an upright tablet the page is one column that scrolls as a whole (static/app.css), and the
// tabs sit below the plot, the readout and the step-through: a tapped title could change only itself, its
// contents below the screen's edge. Then the tabs are scrolled up to the screen's top. Where the contents are in
// view already (every two-column screen, an upright tablet) nothing moves. Where the titles are one row that
// scrolls sideways (a projector's, static/app.css), the tapped or keyed title is scrolled fully into that row.
const view = globalThis.Bokeh?.index?.find_one(source);
if (view != null) {
  // a frame later: the new tab's contents are laid out (a tab built on its first showing arrives later still,
  // but its header and the room below it are there at once)
  requestAnimationFrame(() => {
    const header = view.el.shadowRoot?.querySelector(".bk-header");
    // the shown title fully inside its row: now, and again when the server's answer redraws the titles (a tab
    // built on its first showing), which puts the row back at its start
    const intoRow = () => {
      const title = view.el.shadowRoot?.querySelector(".bk-tab.bk-active");
      const row = title?.closest(".bk-headers-wrapper");
      if (row == null || row.scrollWidth <= row.clientWidth) return;
      const [t, r] = [title.getBoundingClientRect(), row.getBoundingClientRect()];
      if (t.left < r.left || t.right > r.right) row.scrollLeft += t.left < r.left ? t.left - r.left - 24 : t.right - r.right + 24;
    };
    intoRow();
    // Only the titles' row is watched, and by one observer a page: every change of class inside a tab's
    // contents (BokehJS lays out each built tab again on a switch) would otherwise measure the row, a forced
    // layout each time, for every tap of the last five seconds.
    view.aeTitlesRedrawn?.disconnect();
    if (header != null) {
      const redrawn = view.aeTitlesRedrawn = new MutationObserver(intoRow);
      redrawn.observe(header, {childList: true, subtree: true, attributes: true, attributeFilter: ["class"]});
      setTimeout(() => redrawn.disconnect(), 5000);
    }
    // less room below the titles than a tab's least (MIN_TAB_HEIGHT, tests/ui/test_layout_screens.py): the
    // contents are not really in view. Only the column that scrolls moves (scrollIntoView would also move the
    // page's frame, whose overflow is hidden, and take the header off the screen).
    const hidden = () => (header ?? view.el).getBoundingClientRect().bottom > window.innerHeight - 250;
    const parentOf = (el) => el.parentElement ?? (el.getRootNode() instanceof ShadowRoot ? el.getRootNode().host : null);
    let a = parentOf(view.el);
    while (a != null && !(["auto", "scroll"].includes(getComputedStyle(a).overflowY) && a.scrollHeight > a.clientHeight)) {
      a = parentOf(a);
    }
    if (a == null) return;
    const align = () => { a.scrollTop += view.el.getBoundingClientRect().top - a.getBoundingClientRect().top; };
    if (hidden()) align();
    // what the server then shows above the tabs (the query plot coming back from a tab that took the stage,
    // widgets/stage.py) moves them down after this frame: they go back to the top as it comes, for a few seconds,
    // until the learner scrolls or touches the page themselves
    view.aeKeepAtTop?.();
    const kinds = ["wheel", "touchstart", "keydown", "pointerdown"];
    let frame = 0;
    const until = performance.now() + 5000;
    const stop = view.aeKeepAtTop = () => {
      cancelAnimationFrame(frame);
      for (const kind of kinds) window.removeEventListener(kind, stop, true);
      view.aeKeepAtTop = null;
    };
    for (const kind of kinds) window.addEventListener(kind, stop, true);
    const keep = () => {
      if (performance.now() > until) { stop(); return; }
      if (hidden() && Math.abs(view.el.getBoundingClientRect().top - a.getBoundingClientRect().top) > 1) align();
      frame = requestAnimationFrame(keep);
    };
    frame = requestAnimationFrame(keep);
  });
}
