// What the page's drag scripts share (link/drag.js, link/projections.js): numbers in the page's language, the
// plane's clamp, a Div's drawn element, a data source's columns. Pure functions, except markup (the page's views).
// Needs fmt from attention.js before it; tested under node (tests/js/).

// Numbers as the page's language writes them (session/i18n.py, Translator.num, .short and .vec): `w` holds its decimal
// mark, a vector separator that never clashes with it, and whether a vector is isolated left to right inside
// right-to-left text.
function fmtL(x, d, w) { const s = fmt(x, d); return w.decimal === "." ? s : s.replace(".", w.decimal); }
// At most d decimals and no trailing zeros (1, 0.5, 0.005), as core.report.fmt_short and Translator.short.
function fmtShortL(x, d, w) {
  const s = fmt(x, d), short = s.includes(".") ? s.replace(/0+$/, "").replace(/\.$/, "") : s;
  return w.decimal === "." ? short : short.replace(".", w.decimal);
}
function fmtVec(v, d, w) {
  const s = "(" + v.map((c) => fmtL(c, d, w)).join(w.vector_sep) + ")";
  return w.isolate ? "\u2066" + s + "\u2069" : s;
}

// x within [lo, hi], as the server clamps a position (link/drag.py, link/projections.py): NaN stays NaN.
const clamp = (x, lo, hi) => Math.min(Math.max(x, lo), hi);

// The handle a press at p picks up: the index of the nearest of `points` within `radius`, else null. `rival`,
// if given, is a point that wins ties and anything nearer (q against the keys, link/drag.py's _grab).
function nearestWithin(points, p, radius, rival = null) {
  const d = points.map((h) => Math.hypot(h[0] - p[0], h[1] - p[1]));
  const j = d.indexOf(Math.min(...d));
  if (!(d[j] <= radius)) return null;
  return rival != null && !(d[j] < Math.hypot(rival[0] - p[0], rival[1] - p[1])) ? null : j;
}

// The JSON text the server sends (a dict in a data source reaches the page as a Map), parsed once per text.
const parsedTexts = new Map();
function parsedOnce(text) {
  if (!parsedTexts.has(text)) { parsedTexts.clear(); parsedTexts.set(text, JSON.parse(text)); }
  return parsedTexts.get(text);
}

// One value of a data source's column, if the column has that row.
function col(src, name, i, value) {
  if (src.data[name] !== undefined && i < src.data[name].length) src.data[name][i] = value;
}

// A copy of a data source's columns, rows that are arrays copied too.
const copyColumns = (d) => Object.fromEntries(Object.entries(d).map(
  ([k, v]) => [k, Array.from(v, (x) => (Array.isArray(x) ? x.slice() : x))]));

// The element a Div's view draws its text or SVG into. Bokeh.index.find_one walks every view of the page:
// a view is looked up again only once it is gone. `st` keeps the views found.
function markup(st, model) {
  const views = (st.views ??= new Map());
  let view = views.get(model.id);
  if (view == null || view.is_destroyed) views.set(model.id, view = Bokeh.index.find_one(model));
  return view != null ? view.markup_el : null;
}
