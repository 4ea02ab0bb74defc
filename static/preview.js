// Drag preview: while the pointer moves, draw the numbers it implies on the same frame,
// before the server's answer arrives. Needs attentionStep and fmt from attention.js.
//
// Everything here is a preview. The server still receives every (coalesced) position,
// recomputes with the NumPy core and sends its numbers, which replace these. Changes are
// made with {sync: false}: they redraw the page but are never sent back to the server.
//
// `a` holds the Bokeh models (see widgets/preview.py): inputs (what the server says the
// computation depends on), confirmed (the query of the server's latest numbers), query, lines,
// bars, line_out, plane_out, plane_values, cells, sums, outputs, readout, figure, and live
// (which room the page follows live; see onLive).
//
// During the page's own drag of q the server sends its numbers as the readout's text (which
// replaces the preview's when it is for the position previewed), and holds the data of the plots
// this preview draws, with the same numbers, until the hand lets go (AttentionState.plotted). So a
// server update mid-drag no longer repaints those plots.

// q: the previewed position (null: the server's numbers are shown); text: its readout text; path:
// every position previewed since the press; server: the query of the server's latest numbers;
// redraw: the server has written into the plots since the preview last drew them; inputs: the
// inputs st.text was computed with. Following a room: fromLive (the preview came from the room's
// live channel), saved (the server's data under it), room, socket, shown, awaiting, previewed
// (versions of the room's views; see onLive).
function previewState(a) {
  const all = (window.attentionExplorerPreview ??= new Map());
  if (!all.has(a.inputs.id))
    all.set(a.inputs.id, { dragging: false, q: null, path: new Set(), releasedAt: 0, redraw: false,
                           server: [a.confirmed.data.x[0], a.confirmed.data.y[0]] });
  return all.get(a.inputs.id);
}

const samePoint = (p, q) => p[0] === q[0] && p[1] === q[1];

function col(src, name, i, value) {
  if (src.data[name] !== undefined && i < src.data[name].length) src.data[name][i] = value;
}

function fmtVec(v, d) { return "(" + v.map((c) => fmt(c, d)).join(", ") + ")"; }
function fmtEntry(x) { return x === -Infinity ? "masked" : fmt(x, 4); }
function sqrtText(d) { const r = Math.round(Math.sqrt(d)); return r * r === d ? String(r) : "√" + d; }

// The same text as widgets/inspector.py's Readout.text, including the step-through's
// placeholders for numbers of steps not yet revealed (revealed[k-1] for step k).
function readoutText(inp, q, r) {
  const tokens = inp.tokens, i = inp.selected, shown = (step) => inp.revealed[step - 1];
  const perToken = (row, step = 1) =>
    row.map((x, j) => `${tokens[j]} ${shown(step) ? fmtEntry(x) : inp.placeholder}`).join(", ");
  const scale = inp.scale ? `q·k / ${sqrtText(q.length)}` : "q·k (unscaled)";
  const out = r.output;
  const outText = !shown(3) ? `Output Σ aᵢvᵢ = ${inp.placeholder}`
    : inp.scalar ? `Output Σ aᵢvᵢ = ${fmt(out[0], 4)} ≈ ${fmt(out[0], 2)}`
    : `Output Σ aᵢvᵢ = ${fmtVec(out, 4)} ≈ ${fmtVec(out, 2)}`;
  return `Query of "${tokens[i]}": q = ${fmtVec(q, 3)}\n` +
    `Dot products q·k: ${perToken(r.dots)}\n` +
    `Scores s = ${scale}: ${perToken(r.scores)}\n` +
    `Weights a = softmax(s): ${perToken(r.weights, 2)}\n` + outText;
}

function inputsOf(a) {
  const d = a.inputs.data;
  return {
    keys: d.keys[0], values: d.values[0], tokens: d.tokens[0], allowed: d.allowed[0],
    selected: d.selected[0], scale: d.scale[0], scalar: d.scalar[0],
    revealed: d.revealed[0], placeholder: d.placeholder[0],
    plane: d.plane[0], grab: d.grab[0], maxWidth: d.max_width[0],
  };
}

// Writes the readout's text into its element only. Setting the Div model's text instead would
// rebuild the Div and re-lay-out the page on every move (tens of ms); the server's text,
// when it comes, goes through the model as usual.
function showReadout(a, text) {
  const st = previewState(a);
  // Bokeh.index.find_one walks every view of the page: look the readout up again only once its view is gone
  if (st.readout == null || st.readout.is_destroyed) st.readout = Bokeh.index.find_one(a.readout);
  const view = st.readout;
  if (view != null && view.markup_el != null && view.markup_el.textContent !== text) view.markup_el.textContent = text;
}

// The readout (text) changes at once; the plots' data sources change on the next
// animation frame, just before the browser paints them, once however many moves came.
function applyPreview(a, q) {
  const inp = inputsOf(a);
  const r = attentionStep(q, inp.keys, inp.values, inp.allowed, inp.scale);
  const st = previewState(a);
  st.text = readoutText(inp, q, r);
  st.redraw = false;
  st.inputs = a.inputs.data;
  showReadout(a, st.text);
  st.frame = { q, r, inp };
  if (!st.frameRequested) {
    st.frameRequested = true;
    // not once the server's numbers have taken over: they are newer
    requestAnimationFrame(() => { st.frameRequested = false; if (st.q != null) drawFrame(a, st.frame); });
  }
}

function drawFrame(a, { q, r, inp }) {
  const st = previewState(a);
  if (st.fromLive) saveServerData(a, st); // before the first write into whatever the server last sent
  col(a.query, "x", 0, q[0]); col(a.query, "y", 0, q[1]);
  col(a.query, "marker", 0, "circle"); col(a.query, "angle", 0, 0); // a previewed q is inside the plane
  col(a.query, "label", 0, `q ${fmtVec(q, 2)}`);
  a.query.change.emit();
  r.weights.forEach((w, j) => {
    col(a.lines, "xs", j, [q[0], inp.keys[j][0]]); col(a.lines, "ys", j, [q[1], inp.keys[j][1]]);
    col(a.lines, "width", j, 1 + (inp.maxWidth - 1) * w);
    col(a.bars, "top", j, w); col(a.bars, "label", j, fmt(w, 4));
    if (!inp.scalar) col(a.plane_values, "size", j, 8 + 16 * w);
  });
  a.lines.change.emit(); a.bars.change.emit();
  if (inp.scalar) {
    col(a.line_out, "x", 0, r.output[0]); col(a.line_out, "label", 0, fmt(r.output[0], 4));
    a.line_out.change.emit();
  } else {
    col(a.plane_out, "x", 0, r.output[0]); col(a.plane_out, "y", 0, r.output[1]);
    col(a.plane_out, "label", 0, `output ${fmtVec(r.output, 4)}`);
    a.plane_out.change.emit(); a.plane_values.change.emit();
  }
  // the selected row of the matrix: its unmasked cells, in column order
  const cells = a.cells.data;
  for (let c = 0; c < cells.y.length; c++) {
    if (cells.y[c] !== inp.selected) continue;
    const w = r.weights[cells.x[c]];
    cells.weight[c] = w; cells.label[c] = fmt(w, 4); cells.text_color[c] = w < 0.55 ? "white" : "black";
  }
  a.cells.change.emit();
  col(a.sums, "label", inp.selected, fmt(r.weights.reduce((s, w) => s + w, 0), 4));
  col(a.outputs, "label", inp.selected, inp.scalar ? fmt(r.output[0], 4) : fmtVec(r.output, 4));
  a.sums.change.emit(); a.outputs.change.emit();
}

// Chromium holds pointermove (and so Bokeh's Pan) back until just before the next animation
// frame: up to 16.7 ms after the hand moved. pointerrawupdate comes as soon as the page is free,
// so during a drag the preview follows it; the Pan of the same move then finds the numbers
// already shown. Coordinates as Bokeh computes them for its events (UIEventBus._get_sxy and
// _trigger_bokeh_event), so the server's position for the last move is the previewed one exactly.
function listenRaw(a) {
  const st = previewState(a);
  const view = Bokeh.index.find_one(a.figure);
  if (view == null || st.rawTarget === view.canvas_view.events_el) return;
  st.rawTarget = view.canvas_view.events_el; // Bokeh captures the pointer here during a drag
  st.rawTarget.addEventListener("pointerrawupdate", (e) => {
    if (!st.dragging) return;
    const box = st.rawTarget.getBoundingClientRect();
    const sx = e.pageX - (box.left + scrollX - document.documentElement.clientLeft);
    const sy = e.pageY - (box.top + scrollY - document.documentElement.clientTop);
    previewAt(a, st, view.frame.x_scale.invert(sx), view.frame.y_scale.invert(sy));
  });
}

// Preview the query at (x, y), clamped to the plane as widgets/query_plot.py clamps it.
function previewAt(a, st, x, y) {
  const [lo, hi] = inputsOf(a).plane;
  const q = [Math.min(Math.max(x, lo), hi), Math.min(Math.max(y, lo), hi)];
  if (!Number.isFinite(q[0]) || !Number.isFinite(q[1])) return;
  if (st.fromLive) endPreview(a, st); // the learner's own move replaces a followed one
  st.q = q;
  st.path.add(String(q));
  applyPreview(a, q);
}

function endPreview(a, st) {
  st.q = null;
  if (st.fromLive) restoreServerData(a, st);
  st.fromLive = false;
  showReadout(a, a.readout.text); // the server's text, even if it did not change
}

// What drawFrame writes into. The page's own drag always ends with the server drawing its last
// position; a followed drag may end on a view whose data the server has already sent (it never
// took the drag's positions), so the page keeps the server's data to put back.
const DRAWN = ["query", "lines", "bars", "line_out", "plane_out", "plane_values", "cells", "sums", "outputs"];
const copyColumns = (d) => Object.fromEntries(Object.entries(d).map(
  ([k, v]) => [k, Array.from(v, (x) => (Array.isArray(x) ? x.slice() : x))]));

function saveServerData(a, st) {
  st.saved ??= new Map();
  for (const name of DRAWN) {
    const saved = st.saved.get(name);
    if (saved == null || saved.data !== a[name].data) st.saved.set(name, { data: a[name].data, copy: copyColumns(a[name].data) });
  }
}

function restoreServerData(a, st) {
  for (const [name, { data, copy }] of st.saved ?? []) {
    if (a[name].data !== data) continue; // the server has sent newer data since
    for (const [k, v] of Object.entries(copy)) v.forEach((x, i) => { if (data[k] !== undefined) data[k][i] = x; });
    a[name].change.emit();
  }
  st.saved = new Map();
}

// The hand let go (or tapped). If the server has already drawn the last position, its numbers are
// final; if it never does (it refused the position), they take over a second later all the same.
function release(a, st) {
  st.dragging = false;
  st.releasedAt = performance.now();
  if (st.q != null && samePoint(st.server, st.q)) endPreview(a, st);
  setTimeout(() => {
    if (st.q != null && !st.dragging && performance.now() - st.releasedAt >= 1000) endPreview(a, st);
  }, 1000);
}

// Tap, PanStart, Pan, PanEnd on the query plot: mirror widgets/query_plot.py's choice of target
function onPointer(a, ev) {
  const st = previewState(a), inp = inputsOf(a);
  if (ev.event_name === "panstart" && "onpointerrawupdate" in window) listenRaw(a);
  if (ev.event_name === "panend") { if (st.dragging) release(a, st); return; }
  if (ev.x == null || ev.y == null) return;
  if (ev.event_name !== "pan") st.path.clear(); // a new press
  if (ev.event_name === "panstart") {
    // a drag that starts near a key moves that key (the server decides the same way): no preview
    // as the server decides it: against its q (what the page draws can be a preview, or a presenter's q)
    const cur = [a.confirmed.data.x[0], a.confirmed.data.y[0]];
    const dq = Math.hypot(cur[0] - ev.x, cur[1] - ev.y);
    const dk = inp.keys.map((k) => Math.hypot(k[0] - ev.x, k[1] - ev.y));
    const j = dk.indexOf(Math.min(...dk));
    st.dragging = !(dk[j] <= inp.grab && dk[j] < dq);
  } else if (ev.event_name === "tap") {
    st.dragging = true;
  }
  if (!st.dragging) return;
  previewAt(a, st, ev.x, ev.y);
  if (ev.event_name === "tap") release(a, st);
}

// The server's numbers arrived: its readout text or its query position changed (`from` is that
// model). During a drag they win, unless the hand has already moved on: then the newer preview is
// drawn again before the browser paints, so the numbers never step back to an older position.
// After the release the preview waits only while the server is still drawing earlier positions
// of this drag. Anything else it sends (the last position, a row chosen with a key or a click)
// is newer than the preview, and the server alone draws from then on.
function onServerUpdate(a, from) {
  const st = previewState(a);
  if (from === a.live) return onLive(a, st);
  if (from === a.confirmed) st.server = [a.confirmed.data.x[0], a.confirmed.data.y[0]];
  // a followed drag's preview ends when the server says which view it has drawn (onLive): the
  // changes of a view arrive first, the view's version last
  if (st.q == null || st.fromLive) return;
  if (from === a.query) st.redraw = true;
  queueMicrotask(() => {
    if (st.q == null) return;
    const caughtUp = samePoint(st.server, st.q);
    if (st.dragging ? caughtUp : (caughtUp || !st.path.has(String(st.server))
                                  || performance.now() - st.releasedAt > 1000)) {
      if (!st.dragging) endPreview(a, st);
    } else if (st.redraw || st.inputs !== a.inputs.data) {
      applyPreview(a, st.q);
    } else {
      showReadout(a, st.text); // the server's text was for an earlier position; the plots are the preview's
    }
  });
}

// Following a room: a.live says which room's live channel to follow (room; "" for none), where the
// channel is (path, under the server's prefix) and which of the room's views the server's numbers on
// this page show (version). The channel brings the presenter's query during a drag, tagged with the
// room's view it belongs to; the page previews each one for a later view than it shows, as if its own
// pointer had moved there. A text without a query (more than the query changed) makes the page wait
// for its server's numbers. The server sends the version last with each view it applies, so the
// preview ends there, with the server's data put back where the view did not change it.
function onLive(a, st) {
  const d = a.live.data, room = d.room[0];
  st.shown = d.version[0];
  if (st.q != null && st.fromLive && !st.dragging && (st.previewed <= st.shown || !room))
    queueMicrotask(() => { if (st.q != null && st.fromLive) endPreview(a, st); });
  if (room === st.room) return;
  st.room = room;
  if (st.socket != null) st.socket.close();
  st.socket = null;
  st.retry = 1000;
  if (room) connectLive(a, st, room, d.path[0]);
}

function connectLive(a, st, room, path) {
  const url = new URL(path + "?room=" + encodeURIComponent(room), location.href);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  const socket = new WebSocket(url);
  st.socket = socket;
  socket.onopen = () => { st.retry = 1000; };
  socket.onmessage = (e) => onLiveView(a, st, JSON.parse(e.data));
  socket.onclose = (e) => {
    // 4400/4404: the server refused this page or knows no such room: do not ask again. Otherwise
    // (a restart, a dropped network) try again, less and less often; the server's full views arrive
    // without the channel all the same, only later.
    if (st.socket !== socket || e.code === 4400 || e.code === 4404) return;
    setTimeout(() => { if (st.socket === socket && st.room === room) connectLive(a, st, room, path); }, st.retry);
    st.retry = Math.min(2 * st.retry, 60000);
  };
}

function onLiveView(a, st, m) {
  if (!(m.version > st.shown)) return;
  if (m.query == null) { st.awaiting = Math.max(st.awaiting ?? 0, m.version); return; }
  if (st.dragging || st.awaiting > st.shown) return;
  st.fromLive = true;
  st.q = m.query;
  st.previewed = m.version;
  st.path.clear();
  applyPreview(a, st.q);
}
