// Point labels placed in screen pixels, where nothing else is: widgets/projections.py's planes.
//
// The server picks each label's side from the data (away from the other points), but it never knows the
// figure's size in pixels, which follows the tab's width, nor the size of a projector's text and markers.
// The page does: after a figure has been drawn, each label of a Text glyph whose source has the columns
// dx, dy, align and baseline (its offsets in px and its anchoring) takes the first of up to 112 candidate places
// around its point (the farther ones with a leader line) that is clear of every marker, every label already
// placed and the frame's edge, and preferably of every line segment. The server's side is tried first, so a label moves only when it has to.
// The columns are changed in place (the server's copy is its preference, and is never sent back).
//
// Run by scheduleLabels(fig) from the figure's tick formatter: the one script Bokeh runs each time it draws a
// figure, so a label follows a resize, a new range, a restyle (projector mode) and a drag's preview alike.

// A box clear of another needs this gap (CSS px); the layout test counts more than 1 px of overlap.
const LABEL_GAP = 2;
// How much further out each ring of candidates lies (px): the near rings beside the point, the far ones (a
// crowded plane: a projector's labels on an 800×600 screen, a phone) reached by a leader line.
const LABEL_RINGS = [0, 6, 14, 26, 40, 56, 76, 100];
// A label this far out (px, beyond its marker) gets a leader line from its point.
const LEADER_FROM = 20;

const boxOverlap = (a, b) => Math.max(0, Math.min(a.right, b.right) - Math.max(a.left, b.left) + LABEL_GAP) *
  Math.max(0, Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) + LABEL_GAP);

// Whether the segment (x0, y0)-(x1, y1) passes through box b (Liang-Barsky clipping).
function segmentCrosses(s, b) {
  let t0 = 0, t1 = 1;
  const dx = s.x1 - s.x0, dy = s.y1 - s.y0;
  for (const [p, q] of [[-dx, s.x0 - b.left], [dx, b.right - s.x0], [-dy, s.y0 - b.top], [dy, b.bottom - s.y0]]) {
    if (p === 0) { if (q < 0) return false; continue; }
    const t = q / p;
    if (p < 0) t0 = Math.max(t0, t); else t1 = Math.min(t1, t);
    if (t0 > t1) return false;
  }
  return true;
}

// The candidate places of a label for a point under a marker of radius r, best first: [{dx, dy, align,
// baseline, ring}], in each ring the side (sx, sy) (signs, screen y down) first, then the sides nearest it. The
// near rings try the eight sides; from the third ring on, sixteen directions, since a crowded plane's gaps are
// narrow.
function labelCandidates(r, sx, sy) {
  const a = r + LABEL_GAP + 1, lift = Math.max(2, 0.6 * r);
  const eight = [[1, -1], [1, 1], [-1, -1], [-1, 1], [1, 0], [-1, 0], [0, -1], [0, 1]];
  const sixteen = [...Array(16).keys()].map((k) => [Math.cos(k * Math.PI / 8), Math.sin(k * Math.PI / 8)]);
  const norm = Math.hypot(sx || 0, sy || 0) || 1;
  const rank = ([ux, uy]) => -(ux * (sx || 0) + uy * (sy || 0)) / norm / Math.hypot(ux, uy) +
    (Math.abs(ux) > 0.1 && Math.abs(uy) > 0.1 ? 0 : 0.5);
  const out = [];
  LABEL_RINGS.forEach((ring, n) => {
    const sides = (n < 2 ? eight : sixteen).slice().sort((p, q) => rank(p) - rank(q));
    for (const [ux, uy] of sides) {
      const diagonal = Math.abs(ux) > 0.1 && Math.abs(uy) > 0.1;
      const cx = Math.abs(ux) < 0.1 ? 0 : Math.sign(ux), cy = Math.abs(uy) < 0.1 ? 0 : Math.sign(uy);
      out.push({
        dx: n < 2 ? cx * (diagonal ? a + ring * 0.7 : a + ring) : ux * (a + ring),
        dy: n < 2 ? cy * (diagonal ? lift + ring * 0.7 : a + ring) : uy * (a + ring),
        align: ux > 0.1 ? "left" : ux < -0.1 ? "right" : "center",
        baseline: uy > 0.1 ? "top" : uy < -0.1 ? "bottom" : "middle",
        ring,
      });
    }
  });
  return out;
}

const ANCHOR_X = { left: 0, center: 0.5, right: 1 }, ANCHOR_Y = { top: 0, middle: 0.5, bottom: 1 };

function labelBox(x, y, w, h, c) {
  const left = x + c.dx - ANCHOR_X[c.align] * w, top = y + c.dy - ANCHOR_Y[c.baseline] * h;
  return { left, top, right: left + w, bottom: top + h };
}

// A leader line from the edge of a marker of radius r at (x, y) to the nearest point of the label's box b.
function leaderOf(x, y, r, b) {
  const px = Math.min(Math.max(x, b.left), b.right), py = Math.min(Math.max(y, b.top), b.bottom);
  const len = Math.hypot(px - x, py - y) || 1;
  return { x0: x + (px - x) * r / len, y0: y + (py - y) * r / len, x1: px, y1: py };
}

// Place every label of the figure's view once; true if any moved. A Segment renderer named "label-leaders" is
// not an obstacle: its source (columns x0, y0, x1, y1, one row per label at most, NaN where unused) gets the
// leader lines of the labels placed far from their points.
function placeLabels(view) {
  const frame = view.frame.bbox;
  const markers = [], segments = [], groups = [];
  let leaders = null;
  for (const rv of view.renderer_views.values()) {
    if (!rv.model.visible || !rv.glyph) continue;
    const g = rv.glyph, type = g.model.type, n = g.data_size ?? g.sx?.length ?? 0;
    if (type === "Segment" && rv.model.name === "label-leaders") {
      leaders = rv.model.data_source;
    } else if (type === "Scatter") {
      for (let i = 0; i < n; i++) {
        const r = g.size.get(i) / 2;
        if (Number.isFinite(g.sx[i] + g.sy[i]))
          markers.push({ x: g.sx[i], y: g.sy[i], r, left: g.sx[i] - r, top: g.sy[i] - r, right: g.sx[i] + r, bottom: g.sy[i] + r });
      }
    } else if (type === "Segment") {
      for (let i = 0; i < n; i++) segments.push({ x0: g.sx0[i], y0: g.sy0[i], x1: g.sx1[i], y1: g.sy1[i] });
    } else if (type === "Text" && g.labels && g.swidth) {
      const d = rv.model.data_source.data;
      if (["dx", "dy", "align", "baseline"].every((k) => d[k] != null && d[k].length >= n)) groups.push({ rv, g, d, n });
    }
  }
  const placed = [], lines = [], leaderLines = [], changed = new Set();
  for (const { rv, g, d, n } of groups) {
    for (let i = 0; i < n; i++) {
      const text = g.labels[i] == null ? "" : String(g.labels[i].text ?? "");
      const x = g.sx[i], y = g.sy[i], w = g.swidth[i], h = g.sheight[i];
      if (!text.trim() || !Number.isFinite(x + y + w + h)) continue;
      // the marker under the point, if any: the label keeps clear of it by its radius
      const r = Math.max(0, ...markers.filter((m) => Math.hypot(m.x - x, m.y - y) < 1).map((m) => m.r));
      let best = null, bestCost = Infinity;
      labelCandidates(r, Math.sign(d.dx[i]), Math.sign(d.dy[i])).forEach((c, k) => {
        if (bestCost < 1) return;
        const b = labelBox(x, y, w, h, c);
        let hard = 0;
        for (const o of markers) hard += boxOverlap(b, o);
        for (const o of placed) hard += boxOverlap(b, o);
        const outside = Math.max(0, frame.left + 1 - b.left) + Math.max(0, b.right - frame.right + 1) +
          Math.max(0, frame.top + 1 - b.top) + Math.max(0, b.bottom - frame.bottom + 1);
        hard += outside * (w + h);
        // the leader lines drawn so far are lines too; this place's own leader must not run through a label
        let soft = [...segments, ...leaderLines].filter((s) => segmentCrosses(s, b)).length;
        if (c.ring >= LEADER_FROM) soft += 10 * placed.filter((o) => segmentCrosses(leaderOf(x, y, r, b), o)).length;
        // clear of everything and near wins at once; then clear of markers, labels and the edge: a line crossed
        // costs 1, a leader line 1.5 (a near place over one line reads better than a far one), a leader through a
        // label 10, nearest first
        const cost = hard > 0 ? 1e6 + hard : soft + (c.ring >= LEADER_FROM ? 1.5 : 0) + k * 1e-4;
        if (cost < bestCost) { best = c; bestCost = cost; }
      });
      const box = labelBox(x, y, w, h, best);
      placed.push(box);
      if (best.ring >= LEADER_FROM) {
        const s = leaderOf(x, y, r, box);
        leaderLines.push(s);
        lines.push([s.x0, s.y0, s.x1, s.y1]);
      }
      if (d.dx[i] !== best.dx || d.dy[i] !== best.dy || d.align[i] !== best.align || d.baseline[i] !== best.baseline) {
        d.dx[i] = best.dx; d.dy[i] = best.dy; d.align[i] = best.align; d.baseline[i] = best.baseline;
        changed.add(rv.model.data_source);
      }
    }
  }
  if (leaders != null) {
    // in data units, for the glyph; the columns keep their length (changed in place, never sent to the server)
    const L = leaders.data, xs = view.frame.x_scale, ys = view.frame.y_scale;
    for (let i = 0; i < L.x0.length; i++) {
      const [sx0, sy0, sx1, sy1] = lines[i] ?? [NaN, NaN, NaN, NaN];
      const v = [xs.invert(sx0), ys.invert(sy0), xs.invert(sx1), ys.invert(sy1)];
      ["x0", "y0", "x1", "y1"].forEach((k, j) => {
        const same = (Number.isNaN(v[j]) && Number.isNaN(L[k][i])) || Math.abs(v[j] - L[k][i]) < 1e-9;
        if (!same) { L[k][i] = v[j]; changed.add(leaders); }
      });
    }
  }
  for (const source of changed) source.change.emit();
  return changed.size > 0;
}

// Place the labels of figure `fig` on the next animation frame (once per frame, however often it is asked),
// when the view has drawn with its new size, data and styles.
function scheduleLabels(fig) {
  const pending = (window.attentionExplorerLabels ??= new Set());
  if (pending.has(fig.id)) return;
  pending.add(fig.id);
  requestAnimationFrame(() => {
    pending.delete(fig.id);
    const view = Bokeh.index.find_one(fig);
    if (view != null && view.el.isConnected && view.frame.bbox.width > 0) placeLabels(view);
  });
}

if (typeof module !== "undefined") module.exports = { labelCandidates, labelBox, segmentCrosses };
