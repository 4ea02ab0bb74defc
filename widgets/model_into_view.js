// Run when a head of the Real model tab's grid is tapped (widgets/model.py), with `matrix` the head's matrix figure:
// the grid fills the tab's first screen, and the head it opens (its matrix, and below it one row's recipe) changed
// below the screen's edge, so a class saw only the tapped tile's outline. Each box that scrolls up and down around
// the matrix (the tab's; the matrix's own sideways box too, which it only fills) moves just enough for the whole
// matrix to be in view, never past its top; scrollIntoView would also move the page's frame, whose overflow is hidden.
const view = globalThis.Bokeh?.index?.find_one(matrix);
const parentOf = (el) => el.parentElement ?? (el.getRootNode() instanceof ShadowRoot ? el.getRootNode().host : null);
for (let box = view == null ? null : parentOf(view.el); box != null; box = parentOf(box)) {
  if (!["auto", "scroll"].includes(getComputedStyle(box).overflowY) || box.scrollHeight <= box.clientHeight) continue;
  const [m, b] = [view.el.getBoundingClientRect(), box.getBoundingClientRect()];
  const below = m.bottom - Math.min(b.bottom, window.innerHeight) + 8;
  if (below > 0) box.scrollTop += Math.max(0, Math.min(below, m.top - b.top - 8));
}
