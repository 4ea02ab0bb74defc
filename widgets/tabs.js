// Run when a tab's title is tapped (widgets/tabs.py: the tabs' `active`), with `source` the tabs' model.
//
// On a phone or an upright tablet the page is one column that scrolls as a whole (static/app.css), and the
// tabs sit below the plot, the readout and the step-through: a tapped title could change only itself, its
// contents below the screen's edge. Then the tabs are scrolled up to the screen's top. Where the contents are in
// view already (every two-column screen) nothing moves. Where the titles are one row that scrolls sideways (a
// projector's, static/app.css), the tapped or keyed title is scrolled fully into that row.
const view = Bokeh.index.find_one(source);
if (view != null) {
  // a frame later: the new tab's contents are laid out (a tab built on its first showing arrives later still,
  // but its header and the room below it are there at once)
  requestAnimationFrame(() => {
    const header = view.el.shadowRoot?.querySelector(".bk-header");
    const title = view.el.shadowRoot?.querySelector(".bk-tab.bk-active");
    const row = title?.closest(".bk-headers-wrapper");
    if (row != null && row.scrollWidth > row.clientWidth) {
      const [t, r] = [title.getBoundingClientRect(), row.getBoundingClientRect()];
      if (t.left < r.left || t.right > r.right) row.scrollLeft += t.left < r.left ? t.left - r.left - 24 : t.right - r.right + 24;
    }
    const bottom = (header ?? view.el).getBoundingClientRect().bottom;
    // less than a third of the screen left below the titles: the contents' start is not really in view
    if (bottom > window.innerHeight * 2 / 3) view.el.scrollIntoView({block: "start", behavior: "instant"});
  });
}
