// The Projections tab's drag, under the drag's contract (link/__init__.py): an embedding x_i, or the image e_r W
// of a basis vector under the shown head's W_Q, W_K or W_V. Particular to it: the page computes every position
// (selfAttention, a mirror of core.projections.self_attention at a temperature and of core.scaling.saturation)
// and sends only the press and the release. Needs attention.js, shared.js and outbox.js before it; the server's end is
// link/projections.py (ProjectionChannel).
//
// `a`: inputs (X, the head's W_Q, W_K, W_V, T, tokens, which W the right plane edits, grab radius), channel,
// confirmed, x_fig and w_fig (the planes), x_points, basis, qkv (their data), numbers and status (Divs).

// --- the mirror of the core ---------------------------------------------------------------------------------

// X W for embeddings as rows: (n, d_model) x (d_model, d) -> (n, d), as core.projections.project.
function projectRows(X, W) {
  return X.map((x) => W[0].map((_, c) => x.reduce((acc, xi, i) => acc + xi * W[i][c], 0)));
}

// core.projections.self_attention(X, W_Q, W_K, W_V, temperature=T) and core.scaling.saturation of its weights:
//   X : number[n][d_model]; WQ, WK : number[d_model][d_k]; WV : number[d_model][d_v]; T : number > 0
// returns {Q, K, V, dots, scores, weights, output, maxWeight, entropy}: (n, d_k), (n, d_k), (n, d_v),
// (n, n) three times, (n, d_v), (n,) and (n,) (entropy in nats).
function selfAttention(X, WQ, WK, WV, T) {
  const Q = projectRows(X, WQ), K = projectRows(X, WK), V = projectRows(X, WV);
  const factor = 1 / T; // one multiplication by 1/T, as the core scales
  const dots = Q.map((q) => K.map((k) => k.reduce((acc, kc, c) => acc + q[c] * kc, 0)));
  const scores = dots.map((row) => row.map((d) => d * factor));
  const weights = scores.map((row) => softmax(row).weights); // attention.js
  const output = weights.map((w) => weightedSum(w, V));
  const maxWeight = weights.map((w) => Math.max(...w));
  const entropy = weights.map((w) => -w.reduce((acc, x) => acc + (x > 0 ? x * Math.log(x) : 0), 0) + 0);
  return { Q, K, V, dots, scores, weights, output, maxWeight, entropy };
}

// The text widgets/projections.py writes for the same numbers (projection_status): during a drag, the
// dragged handle and where it is, then each token's output.
// `w`: the page's language, as the server sends it (session/i18n.py, Translator.number_format, and the line's
// template `outputs`).
function statusText(tokens, r, handle, at, w) {
  const where = handle ? `${handle} ${fmtVec(at, 2, w)} → ` : "";
  const outputs = tokens.map((t, i) => `${t} ${fmtVec(r.output[i], 4, w)}`).join(" · ");
  return where + w.outputs.replace("{outputs}", () => outputs);
}

// --- the drag ---------------------------------------------------------------------------------------------------

function projectionState(a) {
  const all = (window.attentionExplorerProjections ??= new Map());
  let st = all.get(a.channel);  // the model, not its id: see link/drag.js's previewState
  if (st == null) all.set(a.channel, st = { target: null, outbox: [], inFlight: 0, seq: 0, sentAt: 0,
                                                   releaseSeq: null, moves: 0, sent: 0 });
  return st;
}

function projectionInputs(a) {
  const d = a.inputs.data;
  return { X: d.X[0], W: d.W[0], T: d.T[0], tokens: d.tokens[0], role: d.role[0], grab: d.grab[0],
           names: { x: d.names_x[0], w: d.names_w[0] }, words: parsedOnce(d.words[0]) };
}

// (x, y) clamped to the plane's visible range, as the server clamps it; null if not finite.
function clampToPlane(fig, x, y) {
  if (x == null || y == null || !Number.isFinite(x) || !Number.isFinite(y)) return null;
  const xr = fig.x_range, yr = fig.y_range;
  return [clamp(x, xr.start, xr.end), clamp(y, yr.start, yr.end)];
}

// The handle a press at p picks up, as widgets/projections.py's ProjectionChannel decides: the nearest
// embedding (left plane) or basis image (right plane) within the grab radius, else nothing.
function grabHandle(a, plane, p) {
  const inp = projectionInputs(a), fig = plane === "x" ? a.x_fig : a.w_fig;
  const handles = plane === "x" ? inp.X : inp.W[inp.role];
  return nearestWithin(handles, p, inp.grab * (fig.x_range.end - fig.x_range.start));
}

function onProjectionPointer(a, ev) {
  const st = projectionState(a), plane = ev.origin === a.x_fig ? "x" : "w";
  const at = clampToPlane(plane === "x" ? a.x_fig : a.w_fig, ev.x, ev.y);
  if (ev.event_name === "panstart") {
    st.target = at == null ? null : grabHandle(a, plane, at);
    if (st.target == null) return;
    st.plane = plane;
    st.last = at;
    st.moves += 1;
    saveDrawn(a, st);
    send(a, st, {x: at[0], y: at[1], plane, start: true});
    previewProjection(a, st, at, st.outbox.length ? null : st.seq); // null: still waiting to go
  } else if (ev.event_name === "pan") {
    if (st.target == null || st.plane !== plane || at == null) return;
    st.last = at;
    st.moves += 1;
    previewProjection(a, st, at, null); // not sent: the release carries the last position
  } else if (ev.event_name === "panend") {
    if (st.target == null) return;
    send(a, st, {x: st.last[0], y: st.last[1], plane: st.plane, end: true});
    st.target = null;
  }
}

// Listen to each plane's pointer once its view is drawn (again): the events come as Bokeh's pan events would.
function attachPlanes(a) {
  const attached = (window.attentionExplorerPlanes ??= new WeakSet());
  for (const fig of [a.x_fig, a.w_fig]) {
    const view = Bokeh.index.find_one(fig);
    if (view == null || view.canvas_view == null || attached.has(view.canvas_view.events_el)) continue;
    attached.add(view.canvas_view.events_el);
    listenToPointer(view, (ev) => onProjectionPointer(a, {...ev, origin: fig}));
  }
}

function showStatus(a, st, text) {
  const el = markup(st, a.status);
  if (el != null && el.textContent !== text) el.textContent = text;
}

// The cell of each number carries data-m (which quantity), data-i and data-j (its row and column).
function writeNumbers(a, st, r, w) {
  const el = markup(st, a.numbers);
  if (el == null) return;
  for (const td of el.querySelectorAll("[data-m]")) {
    const q = r[td.dataset.m];
    if (q === undefined) continue;
    const x = td.dataset.j === undefined ? q[+td.dataset.i] : q[+td.dataset.i][+td.dataset.j];
    td.textContent = fmtL(x, 4, w);
  }
}

// seq: the position's, if it was sent (the press), so that the server's text for it may replace the page's
function previewProjection(a, st, p, seq) {
  const inp = projectionInputs(a);
  const X = inp.X.map((x) => x.slice()), W = inp.W.map((m) => m.map((row) => row.slice()));
  if (st.plane === "x") X[st.target] = p; else W[inp.role][st.target] = p;
  const r = selfAttention(X, W[0], W[1], W[2], inp.T);
  st.previewed = seq; // the sent position this preview is for (null: one the server never sees)
  st.text = statusText(inp.tokens, r, inp.names[st.plane][st.target], p, inp.words);
  showStatus(a, st, st.text);
  writeNumbers(a, st, r, inp.words);
  st.frame = { X, W, r, role: inp.role };
  if (!st.frameRequested) {
    st.frameRequested = true;
    requestAnimationFrame(() => { st.frameRequested = false; if (st.frame != null) drawPlanes(a, st, st.frame); });
  }
}

function drawPlanes(a, st, { X, W, r, role }) {
  X.forEach((x, i) => { col(a.x_points, "x", i, x[0]); col(a.x_points, "y", i, x[1]); });
  a.x_points.change.emit();
  W[role].forEach((w, i) => { col(a.basis, "x", i, w[0]); col(a.basis, "y", i, w[1]); });
  a.basis.change.emit();
  // qkv: the queries, then the keys, then the values, one row per token
  const n = X.length;
  [r.Q, r.K, r.V].forEach((P, k) => P.forEach((p, i) => { col(a.qkv, "x", k * n + i, p[0]); col(a.qkv, "y", k * n + i, p[1]); }));
  a.qkv.change.emit();
}

// What the preview writes into, as the server last drew it: put back where the server sends nothing newer.
function saveDrawn(a, st) {
  st.saved = [a.x_points, a.basis, a.qkv].map((src) => ({ src, data: src.data, copy: copyColumns(src.data) }));
}

function restoreDrawn(a, st) {
  for (const { src, data, copy } of st.saved ?? []) {
    if (src.data !== data) continue; // the server has sent newer data
    for (const [k, v] of Object.entries(copy)) v.forEach((x, i) => { if (data[k] !== undefined) data[k][i] = x; });
    src.change.emit();
  }
  st.saved = null;
  st.frame = null;
  const numbers = markup(st, a.numbers);
  if (numbers != null) numbers.innerHTML = a.numbers.text;
  showStatus(a, st, a.status.text);
}

// The server answered up to seq: send the next position; during the drag its text replaces the preview's
// when it is for the position on screen; once it has answered the release, its numbers are the page's.
function onProjectionAnswer(a) {
  const st = projectionState(a), seq = a.confirmed.data.seq[0];
  answered(a, st);
  if (st.target != null) {
    if (seq === st.previewed) showStatus(a, st, a.confirmed.data.text[0]);
  } else if (st.releaseSeq != null && seq >= st.releaseSeq) {
    st.releaseSeq = null;
    restoreDrawn(a, st);
  }
}

if (typeof module !== "undefined") module.exports = { projectRows, selfAttention, statusText };
