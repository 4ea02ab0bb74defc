// The Train tab's planes: each head's queries, keys (and values) at the step shown, in a frame that holds the
// whole run, their names placed clear of the marks. Drawn into the parts train_parts.js makes, for the step
// train_steps.js draws.

// The ranges of a plane holding every point of the run (and the origin): equal in x and y, with a margin, at least
// ±1.5 (widgets/projections.py fits its planes the same way), so the plane stays still while the run plays.
export function fitPlane(points) {
  let lo = [0, 0], hi = [0, 0];
  for (const [x, y] of points) {
    lo = [Math.min(lo[0], x), Math.min(lo[1], y)];
    hi = [Math.max(hi[0], x), Math.max(hi[1], y)];
  }
  const half = Math.max(1.5, Math.max(hi[0] - lo[0], hi[1] - lo[1]) / 2 * 1.25 + 0.4);
  const centre = [(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2];
  return centre.map((c) => [c - half, c + half]);
}

// Round tick values within [lo, hi], about `count` of them (1, 2 or 5 times a power of ten apart).
function ticks(lo, hi, count) {
  const raw = (hi - lo) / count, power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push(Math.abs(v) < 1e-9 ? 0 : v);
  return out;
}

// A label's box beside the point (x, y) of a marker of radius r, w × h px, in direction (ux, uy) (screen y down)
// and `far` px further out.
function besideBox(x, y, r, w, h, ux, uy, far) {
  const gap = r + 3 + far;
  const left = ux > 0 ? x + gap * Math.min(1, ux * 1.5) : ux < 0 ? x - gap * Math.min(1, -ux * 1.5) - w : x - w / 2;
  const top = uy > 0 ? y + gap * Math.min(1, uy * 1.5) : uy < 0 ? y - gap * Math.min(1, -uy * 1.5) - h : y - h / 2;
  return {left, top, right: left + w, bottom: top + h};
}
const overlap = (a, b, gap = 2) => Math.max(0, Math.min(a.right, b.right) - Math.max(a.left, b.left) + gap) *
  Math.max(0, Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) + gap);
// Directions around a point: the eight near ones, then sixteen for the rings further out.
const EIGHT = [[1, -1], [1, 1], [-1, -1], [-1, 1], [1, 0], [-1, 0], [0, -1], [0, 1]];
const SIXTEEN = [...Array(16).keys()].map((k) => [Math.cos(k * Math.PI / 8), Math.sin(k * Math.PI / 8)]);
// How far out (px) each ring of places lies; from LEADER_FROM on, a leader line joins the label to its point.
const RINGS = [0, 6, 14, 26, 40, 56];
const LEADER_FROM = 26;

// Places for labels {x, y, r, w, h, away: [sx, sy]} among `marks` (boxes), inside `frame`: each the first place
// clear of every mark, every label placed before it and the frame's edge, trying the side away from the other
// points first, then the nearest others, then further out; where none is clear, the one that overlaps least.
// Returns each label's box and whether it needs a leader line.
export function placeLabels(labels, marks, frame) {
  const placed = [];
  return labels.map(({x, y, r, w, h, away}) => {
    let best = null, bestCost = Infinity;
    for (const far of RINGS) {
      const sides = (far < 14 ? EIGHT : SIXTEEN).slice()
        .sort((p, q) => (q[0] * away[0] + q[1] * away[1]) - (p[0] * away[0] + p[1] * away[1]));
      for (const [ux, uy] of sides) {
        const b = besideBox(x, y, r, w, h, ux, uy, far);
        let cost = 0;
        for (const m of marks) cost += overlap(b, m);
        for (const p of placed) cost += overlap(b, p);
        cost += (Math.max(0, frame.left - b.left) + Math.max(0, b.right - frame.right) +
                 Math.max(0, frame.top - b.top) + Math.max(0, b.bottom - frame.bottom)) * (w + h);
        if (cost < bestCost) { best = {...b, leader: far >= LEADER_FROM}; bestCost = cost; }
        if (cost === 0) break;
      }
      if (bestCost === 0) break;
    }
    placed.push(best);
    return best;
  });
}


// Each head's plane: its queries (●), keys (■) and, when W_V learns 2-D values, values (▲) at the step shown,
// in ranges that hold the whole run. Drawn in CSS px at the figure's width (the text at the page's number size).
function buildPlanes(ui) {
  const {st, words, planesBox, tokenColor} = ui;
  const run = st.run, w = words();
  planesBox.replaceChildren();
  const planes = ui.planes = [];
  const showV = run.wv_trained && run.d_v === 2;
  const roles = ["Q", "K", ...(showV ? ["V"] : [])];
  for (let h = 0; h < run.H; h++) {
    const fig = el_("figure", {class: "plane"});
    const cap = el_("figcaption", {}, (showV ? "Q ●  K ■  V ▲" : "Q ●  K ■") +
                                      (run.H > 1 ? " · " + fill(w.head ?? "head {n}", {n: h + 1}) : ""));
    const svg = svg_("svg", {class: "train-plane", "data-h": h, role: "img",
                             "aria-label": fill(w.plane_label ?? "", {n: h + 1})});
    fig.append(cap, svg);
    planesBox.append(fig);
    // every point of the run, for the ranges: Q = X W_Q, K = X W_K (V = X W_V) at each step
    const X = [];
    for (let i = 0; i < run.n; i++) X.push([run.X[2 * i], run.X[2 * i + 1]]);
    const all = [];
    for (let t = 0; t <= run.steps; t++) {
      const hw = stepWeights(run, t).heads[h];
      for (const role of roles) all.push(...matmul(X, hw["W" + role]));
    }
    const range = fitPlane(all);
    const points = [], labels = [];
    const grid = svg_("g", {class: "grid"}), marks = svg_("g", {class: "marks"});
    const names = svg_("g", {class: "names"}), leaders = svg_("g", {class: "leaders"});
    svg.append(grid, leaders, marks, names);
    for (const role of roles) {
      run.tokens.forEach((tok, i) => {
        const kind = role === "Q" ? "circle" : role === "K" ? "rect" : "path";
        const m = svg_(kind, {class: `point ${role}`, "data-role": role, "data-i": i, fill: tokenColor(i)});
        marks.append(m);
        points.push({el: m, role, i});
        if (role === "Q") {  // the queries are named; a key or value has its token's colour
          const text = svg_("text", {class: "name", fill: tokenColor(i)});
          text.textContent = tok;
          names.append(text);
          const leader = svg_("path", {class: "leader"});
          leaders.append(leader);
          labels.push({el: text, leader, i, size: null});
        }
      });
    }
    planes.push({svg, grid, range, points, labels, width: 0});
  }
}

// the plane's frame at its current width and text size: scales from data to px, and its grid and ticks when
// either changed (a resize, projector mode)
function layoutPlane(p, words) {
  const width = Math.round(p.svg.getBoundingClientRect().width);
  const em = parseFloat(getComputedStyle(p.svg).fontSize) || 16;
  if (width === p.width && em === p.em && p.frame) return width > 0;
  p.width = width;
  p.em = em;
  if (width <= 0) return false;
  const L = Math.ceil(em * 2.6), B = Math.ceil(em * 1.6), T = 6, R = 8;
  const size = width - L - R;
  p.svg.setAttribute("height", String(size + T + B));
  p.frame = {left: L, top: T, right: L + size, bottom: T + size};
  const [[x0, x1], [y0, y1]] = p.range;
  p.sx = (v) => L + (v - x0) / (x1 - x0) * size;
  p.sy = (v) => T + (1 - (v - y0) / (y1 - y0)) * size;
  p.r = Math.max(5, Math.round(em * 0.42));
  p.grid.replaceChildren();
  const count = size < 220 ? 3 : 4;
  for (const v of ticks(x0, x1, count)) {
    p.grid.append(svg_("line", {x1: p.sx(v), x2: p.sx(v), y1: T, y2: T + size, class: v === 0 ? "axis zero" : "axis grid"}));
    const t = svg_("text", {x: p.sx(v), y: T + size + em * 1.2, "text-anchor": "middle", class: "tick"});
    t.textContent = short(v, words());
    p.grid.append(t);
  }
  for (const v of ticks(y0, y1, count)) {
    p.grid.append(svg_("line", {x1: L, x2: L + size, y1: p.sy(v), y2: p.sy(v), class: v === 0 ? "axis zero" : "axis grid"}));
    const t = svg_("text", {x: L - 5, y: p.sy(v) + em * 0.35, "text-anchor": "end", class: "tick"});
    t.textContent = short(v, words());
    p.grid.append(t);
  }
  p.grid.append(svg_("rect", {x: L, y: T, width: size, height: size, class: "axis frame"}));
  for (const l of p.labels) l.size = null;  // measured again at this size
  return true;
}

// Draw each plane's points at step t's queries, keys (values), and place the queries' names clear of them.
function drawPlanes(ui, f) {
  ui.planes.forEach((p, h) => {
    if (!layoutPlane(p, ui.words)) return;
    const hd = f.heads[h], r = p.r, marks = [], at = [];
    for (const pt of p.points) {
      const [vx, vy] = hd[pt.role][pt.i], x = p.sx(vx), y = p.sy(vy);
      pt.el.dataset.x = String(vx);
      pt.el.dataset.y = String(vy);
      if (pt.role === "Q") { pt.el.setAttribute("cx", x); pt.el.setAttribute("cy", y); pt.el.setAttribute("r", r); }
      else if (pt.role === "K") {
        pt.el.setAttribute("x", x - r); pt.el.setAttribute("y", y - r);
        pt.el.setAttribute("width", 2 * r); pt.el.setAttribute("height", 2 * r);
      } else pt.el.setAttribute("d", `M${x},${y - 1.2 * r}L${x + 1.1 * r},${y + 0.8 * r}L${x - 1.1 * r},${y + 0.8 * r}Z`);
      marks.push({left: x - r, top: y - r, right: x + r, bottom: y + r});
      at.push([x, y]);
    }
    const mean = at.reduce((a, [x, y]) => [a[0] + x / at.length, a[1] + y / at.length], [0, 0]);
    const wanted = p.labels.map((l) => {
      if (l.size == null) {  // the name's box at the page's font, measured once per size
        l.el.setAttribute("x", "0");
        l.el.setAttribute("y", "0");
        const b = l.el.getBBox();
        l.size = {w: b.width, h: b.height, dx: -b.x, dy: -b.y};
      }
      const [vx, vy] = hd.Q[l.i], x = p.sx(vx), y = p.sy(vy);
      const away = [x - mean[0], y - mean[1]], len = Math.hypot(...away) || 1;
      return {x, y, r, w: l.size.w, h: l.size.h, away: [away[0] / len, away[1] / len]};
    });
    placeLabels(wanted, marks, p.frame).forEach((b, k) => {
      const l = p.labels[k], {x, y} = wanted[k];
      l.el.setAttribute("x", (b.left + l.size.dx).toFixed(1));
      l.el.setAttribute("y", (b.top + l.size.dy).toFixed(1));
      if (b.leader) {  // from the marker's edge to the nearest point of the name's box
        const px = Math.min(Math.max(x, b.left), b.right), py = Math.min(Math.max(y, b.top), b.bottom);
        const len = Math.hypot(px - x, py - y) || 1;
        l.leader.setAttribute("d", `M${(x + (px - x) * r / len).toFixed(1)},${(y + (py - y) * r / len).toFixed(1)}` +
                                   `L${px.toFixed(1)},${py.toFixed(1)}`);
      } else l.leader.removeAttribute("d");
    });
  });
}
