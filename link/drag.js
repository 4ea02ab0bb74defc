// The page's end of the drag of q (and of a key), under the drag's contract (link/__init__.py): what the
// pointer does, what the page draws (a preview, straight into the plots' data and the readout's element), what
// it sends (outbox.js). Needs attention.js, shared.js and outbox.js before it; the server's end is link/drag.py.
//
// `a` holds the Bokeh models (link/drag.py): inputs, confirmed, channel, query, lines, bars, readout, figure,
// live (see onLive); the views built later are found by name (NAMED). During the page's own drag of q the
// server's numbers arrive as the readout's text; the plots keep the preview until the release.

// q: the previewed position (null: the server's numbers are shown); text: its readout text; path:
// every position previewed since the press; server: the query of the server's latest numbers;
// redraw: the server has written into the plots since the preview last drew them; inputs: the
// inputs st.text was computed with. Following a room: fromLive (the preview came from the room's
// live channel), saved (the server's data under it), room, socket, shown, awaiting, previewed
// (versions of the room's views; see onLive).
// Sending: outbox (positions waiting to go), inFlight (seq of the one sent and not yet answered, 0 for
// none), seq, sentAt, and two counters a test reads: moves (pointer events of drags and taps) and sent.
// Keyed by the model itself: two displays on one page (a notebook's, or sessions of two server processes) can
// hold models with the same id.
function previewState(a) {
  const all = (window.attentionExplorerDrag ??= new Map());
  if (!all.has(a.inputs))
    all.set(a.inputs, { dragging: false, q: null, path: new Set(), releasedAt: 0, redraw: false,
                           server: [a.confirmed.data.x[0], a.confirmed.data.y[0]],
                           outbox: [], inFlight: 0, seq: 0, sentAt: 0, moves: 0, sent: 0 });
  return all.get(a.inputs);
}

const samePoint = (p, q) => p[0] === q[0] && p[1] === q[1];

// A number of a right-to-left page's sentence, isolated left to right (Translator.ltr): "-1.5000", never "1.5000-".
function isoL(text, w) { return w.isolate ? "\u2066" + text + "\u2069" : text; }
function fmtEntry(x, w) { return x === -Infinity ? w.masked : isoL(fmtL(x, 4, w), w); }
// Letters written right to left: a token with one is isolated in a page of any language (Translator.name, RTL_LETTER)
const RTL_LETTER = /[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]/;
function sqrtText(d) { const r = Math.round(Math.sqrt(d)); return r * r === d ? String(r) : "√" + d; }
const fill = (template, args) => template.replace(/\{(\w+)\}/g, (m, k) => (k in args ? args[k] : m));

// The same text as widgets/steps.py's Readout.text, from the same templates in the page's language
// (readout_words), including the step-through's placeholders for numbers of steps not yet revealed
// (revealed[k-1] for step k).
function readoutText(inp, q, r) {
  const w = inp.words, i = inp.selected, shown = (step) => inp.revealed[step - 1];
  // a token isolated in a right-to-left page, or one with a right-to-left letter (Translator.name): the list's
  // entries then read in the page's order
  const tokens = inp.tokens.map((t) => (w.isolate || RTL_LETTER.test(t) ? "\u2068" + t + "\u2069" : t));
  const perToken = (row, step = 1) =>
    row.map((x, j) => `${tokens[j]} ${shown(step) ? fmtEntry(x, w) : inp.placeholder}`).join(w.list_sep);
  const scale = inp.scale ? fill(w.scaled, {root: sqrtText(q.length)}) : w.unscaled;
  const out = r.output;
  const value = !shown(3) ? inp.placeholder
    : inp.scalar ? `${isoL(fmtL(out[0], 4, w), w)} ≈ ${isoL(fmtL(out[0], 2, w), w)}`
    : `${fmtVec(out, 4, w)} ≈ ${fmtVec(out, 2, w)}`;
  return [fill(w.query, {token: tokens[i], q: fmtVec(q, 3, w)}), fill(w.dots, {list: perToken(r.dots)}),
          fill(w.scores, {scale, list: perToken(r.scores)}), fill(w.weights, {list: perToken(r.weights, 2)}),
          fill(w.output, {value})].join("\n");
}

function inputsOf(a) {
  const d = a.inputs.data;
  return {
    keys: d.keys[0], values: d.values[0], tokens: d.tokens[0], allowed: d.allowed[0],
    selected: d.selected[0], scale: d.scale[0], scalar: d.scalar[0],
    revealed: d.revealed[0], placeholder: d.placeholder[0], words: parsedOnce(d.words[0]),
    plane: d.plane[0], grab: d.grab[0], maxWidth: d.max_width[0], cellDecimals: d.cell_decimals[0],
    valueSize: d.value_size[0], inkThreshold: d.ink_threshold[0],
  };
}

// Writes the readout's text into its element only. Setting the Div model's text instead would
// rebuild the Div and re-lay-out the page on every move (tens of ms); the server's text,
// when it comes, goes through the model as usual.
function showReadout(a, text) {
  const el = markup(previewState(a), a.readout);
  if (el != null && el.textContent !== text) el.textContent = text;
}

// The geometry the server draws with, from the numbers it sends (inputs, or the chart's own data-*): a query
// line's width, a value's marker size and a matrix cell's ink (link/rules.py), a bar's top (widgets/weights.py,
// WeightBars).
const lineWidth = (w, maxWidth) => 1 + (maxWidth - 1) * w;
const valueSize = (w, [atZero, atOne]) => atZero + (atOne - atZero) * w;
const barY = (w, top, bottom) => bottom - w * (bottom - top);
const inkOn = (w, threshold) => (w < threshold ? "white" : "black");

// The weights' bars and the values' number line are SVG drawn by the server (widgets/weights.py); the
// preview moves their bars, numbers and marker in place, from the layout the server wrote on the <svg>.
function drawBars(st, model, weights, L) {
  const svg = markup(st, model)?.querySelector("svg.bars");
  if (svg == null) return;
  const top = +svg.dataset.top, bottom = +svg.dataset.bottom, gap = +svg.dataset.gap, y = (w) => barY(w, top, bottom);
  for (const bar of svg.querySelectorAll("rect.bar")) {
    const w = weights[+bar.dataset.j];
    bar.setAttribute("y", y(w)); bar.setAttribute("height", bottom - y(w)); bar.dataset.weight = w;
  }
  for (const label of svg.querySelectorAll("text.value")) {
    const w = weights[+label.dataset.j];
    label.setAttribute("y", y(w) - gap); label.textContent = fmtL(w, 4, L);
  }
}

function drawOutput(st, model, out, L) {
  const svg = markup(st, model)?.querySelector("svg.number-line");
  if (svg == null) return;
  const lo = +svg.dataset.lo, hi = +svg.dataset.hi, x = `${(100 * (out - lo) / (hi - lo)).toFixed(3)}%`;
  for (const el of svg.querySelectorAll("[data-output]")) {
    el.setAttribute("x", x);
    if (el.dataset.output === "label") el.textContent = fmtL(out, 4, L);
  }
}

// Put back what the server drew in the SVG charts (the preview drew over it in place).
function redrawCharts(st, d) {
  for (const model of [d.bars, d.line]) {
    const el = model != null ? markup(st, model) : null;
    if (el != null) el.innerHTML = model.text;
  }
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

// The data sources drawFrame writes into. The query plot's and the bars' are always on the page (in
// `a`); the others belong to views built when first needed (the number line for scalar values, the plane
// for vectors, the matrix when its tab opens), and are found by name once they are there.
const NAMED = {line: "output-line", plane_out: "value-plane-output", plane_values: "value-plane-values",
               cells: "matrix-cells", sums: "matrix-sums", outputs: "matrix-outputs"};
// The SVG charts: redrawn from the server's text, not saved and restored as data sources are.
const CHARTS = new Set(["bars", "line"]);

function drawn(a, st) {
  const found = (st.named ??= {});
  const out = {query: a.query, lines: a.lines, bars: a.bars};
  for (const [key, name] of Object.entries(NAMED)) {
    let m = found[key];
    if (m == null || m.document == null) m = found[key] = a.figure.document.get_model_by_name(name);
    if (m != null) out[key] = m;
  }
  return out;
}

function drawFrame(a, { q, r, inp }) {
  const st = previewState(a), d = drawn(a, st);
  // a plot's text is drawn left to right as it is: no isolate around its vectors
  const L = inp.words, P = {...L, isolate: false};
  if (st.fromLive) saveServerData(d, st); // before the first write into whatever the server last sent
  col(d.query, "x", 0, q[0]); col(d.query, "y", 0, q[1]);
  col(d.query, "marker", 0, "circle"); col(d.query, "angle", 0, 0); // a previewed q is inside the plane
  col(d.query, "label", 0, `q ${fmtVec(q, 2, P)}`);
  d.query.change.emit();
  r.weights.forEach((w, j) => {
    col(d.lines, "xs", j, [q[0], inp.keys[j][0]]); col(d.lines, "ys", j, [q[1], inp.keys[j][1]]);
    col(d.lines, "width", j, lineWidth(w, inp.maxWidth));
    if (!inp.scalar && d.plane_values) col(d.plane_values, "size", j, valueSize(w, inp.valueSize));
  });
  d.lines.change.emit();
  drawBars(st, d.bars, r.weights, L);
  if (inp.scalar && d.line) {
    drawOutput(st, d.line, r.output[0], L);
  } else if (!inp.scalar && d.plane_out) {
    col(d.plane_out, "x", 0, r.output[0]); col(d.plane_out, "y", 0, r.output[1]);
    col(d.plane_out, "label", 0, `${L.output_word} ${fmtVec(r.output, 4, P)}`);
    d.plane_out.change.emit(); d.plane_values.change.emit();
  }
  if (d.cells == null) return; // the matrix tab has not been opened yet
  // the selected row of the matrix: its unmasked cells, in column order
  const cells = d.cells.data;
  for (let c = 0; c < cells.y.length; c++) {
    if (cells.y[c] !== inp.selected) continue;
    const w = r.weights[cells.x[c]];
    cells.weight[c] = w; cells.label[c] = fmtL(w, inp.cellDecimals, L); cells.text_color[c] = inkOn(w, inp.inkThreshold);
  }
  d.cells.change.emit();
  const dec = inp.cellDecimals;
  col(d.sums, "label", inp.selected, fmtL(r.weights.reduce((s, w) => s + w, 0), dec, L));
  col(d.outputs, "label", inp.selected, inp.scalar ? fmtL(r.output[0], dec, L) : fmtVec(r.output, dec, P));
  d.sums.change.emit(); d.outputs.change.emit();
}

// The query plot's pointer (outbox.js, listenToPointer: any movement with the button or finger down is a
// drag, however slow). During a drag the preview also follows pointerrawupdate, which Chromium delivers as
// soon as the page is free, up to a frame before the frame-aligned pointermove (secure pages only: HTTPS or
// localhost).
function attach(a) {
  const st = previewState(a);
  const view = Bokeh.index.find_one(a.figure);
  if (view == null || view.canvas_view == null) return;
  const el = view.canvas_view.events_el;
  if (st.pointerTarget === el) return;
  st.pointerTarget = el;
  const doc = a.figure.document;
  // What the page's own drag shows, for its address (link/browser.py): the server takes a drag's positions
  // paced and writes the address only at the release, so the page's last drawn q is newer than the server's.
  (window.attentionExplorerDrawn ??= new WeakMap()).set(doc, () => (st.q != null && !st.fromLive ? st.q : null));
  if (!st.watchesConnection) {
    st.watchesConnection = true;
    // the server has gone: no answer will replace the preview, so the page keeps what it drew last
    doc.on_event("connection_lost", () => { st.lost = true; });
  }
  // the keys' nudges come in this way (link/browser.py), each display's to its own plot
  (window.attentionExplorerPointers ??= new WeakMap()).set(a.figure.document, (ev) => onPointer(a, ev));
  listenToPointer(view, (ev) => onPointer(a, ev), (p) => { if (st.dragging) previewAt(a, st, p.x, p.y); });
  // The plot's side is set by CSS from its column's box. When that box changes (the presenter's room code
  // fills the header, a notice appears) Bokeh resizes the canvas but can keep the frame it laid out for the
  // old size until some later layout pass, which then moves every point under a dragging hand: lay the
  // page out again whenever the canvas and the frame's layout disagree.
  new ResizeObserver(() => requestAnimationFrame(() => {
    const outer = view.layout && view.layout.bbox, box = view.el.getBoundingClientRect();
    if (outer != null && (outer.width !== Math.floor(box.width) || outer.height !== Math.floor(box.height)))
      view.invalidate_layout();
  })).observe(view.el);
}

// Preview the query at (x, y), clamped to the plane as link/drag.py clamps it.
function previewAt(a, st, x, y) {
  const [lo, hi] = inputsOf(a).plane;
  const q = [clamp(x, lo, hi), clamp(y, lo, hi)];
  if (!Number.isFinite(q[0]) || !Number.isFinite(q[1])) return;
  if (st.fromLive) endPreview(a, st); // the learner's own move replaces a followed one
  st.q = q;
  st.path.add(String(q));
  applyPreview(a, q);
}

function endPreview(a, st) {
  st.q = null;
  if (st.fromLive) restoreServerData(a, st);
  redrawCharts(st, drawn(a, st));
  st.fromLive = false;
  showReadout(a, a.readout.text); // the server's text, even if it did not change
}

// What drawFrame writes into (drawn). The page's own drag always ends with the server drawing its last
// position; a followed drag may end on a view whose data the server has already sent (it never took the
// drag's positions), so the page keeps the server's data to put back.

function saveServerData(d, st) {
  st.saved ??= new Map();
  for (const [name, src] of Object.entries(d)) {
    if (CHARTS.has(name)) continue;
    const saved = st.saved.get(name);
    if (saved == null || saved.data !== src.data) st.saved.set(name, { src, data: src.data, copy: copyColumns(src.data) });
  }
}

function restoreServerData(a, st) {
  for (const { src, data, copy } of (st.saved ?? new Map()).values()) {
    if (src.data !== data) continue; // the server has sent newer data since
    for (const [k, v] of Object.entries(copy)) v.forEach((x, i) => { if (data[k] !== undefined) data[k][i] = x; });
    src.change.emit();
  }
  st.saved = new Map();
}

// The hand let go (or tapped). Once the server has answered the release (releaseSeq), its numbers are
// final, and everything it sends after is newer. A nudge by an arrow key sends no position (the key goes
// instead): its preview ends when the server's numbers are for the nudged q, or for one the preview never
// showed (a row chosen right after). If no answer comes, the server's numbers take over all the same.
function release(a, st, sent) {
  st.dragging = false;
  st.releasedAt = performance.now();
  if (!sent) st.releaseSeq = null;
  // the address holds where the hand let go at once, before the server's answer (link/browser.py)
  window.attentionExplorerAddress?.get(a.figure.document)?.();
  // a nudge's key is still on its way: the server's numbers are those from before it, which the preview never
  // showed, and ending it here would take the nudge's numbers off the page in the task that drew them
  if (sent && finished(a, st)) endPreview(a, st);
  const wait = sent ? ANSWER_WAIT_MS : 1000;
  setTimeout(() => {
    if (st.q != null && !st.dragging && !st.lost && performance.now() - st.releasedAt >= wait) endPreview(a, st);
  }, wait);
}

function finished(a, st) {
  if (st.q == null) return false;
  if (st.releaseSeq != null) return answeredSeq(a) >= st.releaseSeq;
  return samePoint(st.server, st.q) || !st.path.has(String(st.server));
}

// Tap, PanStart, Pan, PanEnd on the query plot: send the position (any drag: of q or of a key) and
// preview it (a drag of q, chosen as link/drag.py's DragChannel chooses it). An arrow key's nudge
// comes here as a tap with preview_only: the key itself goes to the server (link/browser.py).
function onPointer(a, ev) {
  const st = previewState(a), inp = inputsOf(a);
  const [lo, hi] = inp.plane;
  const finite = ev.x != null && ev.y != null && Number.isFinite(ev.x) && Number.isFinite(ev.y);
  const at = finite ? [clamp(ev.x, lo, hi), clamp(ev.y, lo, hi)] : null;
  if (ev.event_name === "panend") {
    const last = st.last ?? at;
    const sent = st.pressed && last != null;
    if (sent) send(a, st, {x: last[0], y: last[1], end: true});
    st.pressed = false;
    st.last = null;
    if (st.dragging) release(a, st, sent);
    return;
  }
  if (at == null) return;
  if (!ev.preview_only) {
    st.moves += 1;
    send(a, st, {x: at[0], y: at[1], start: ev.event_name !== "pan", end: ev.event_name === "tap"});
    st.pressed = ev.event_name !== "tap";
    st.last = at;
  }
  if (ev.event_name !== "pan") st.path.clear(); // a new press
  if (ev.event_name === "panstart") {
    // a drag that starts near a key moves that key (the server decides the same way): no preview
    // as the server decides it: against its q (what the page draws can be a preview, or a presenter's q)
    const cur = [a.confirmed.data.x[0], a.confirmed.data.y[0]];
    st.dragging = nearestWithin(inp.keys, [ev.x, ev.y], inp.grab, cur) == null;
  } else if (ev.event_name === "tap") {
    st.dragging = true;
  }
  if (!st.dragging) return;
  previewAt(a, st, ev.x, ev.y);
  if (ev.event_name === "tap") release(a, st, !ev.preview_only);
}

// The server's numbers arrived: its readout text or its query position changed (`from` is that
// model). During a drag they win, unless the hand has already moved on: then the newer preview is
// drawn again before the browser paints, so the numbers never step back to an older position.
// After the release the preview waits only while the server is still drawing earlier positions
// of this drag. Anything else it sends (the last position, a row chosen with a key or a click)
// is newer than the preview, and the server alone draws from then on.
function onServerUpdate(a, from) {
  const st = previewState(a);
  attach(a); // the plot's view exists by now (its first layout, or the first server update)
  if (from === a.figure) return; // laid out (again): nothing the server sent
  if (from === a.live) return onLive(a, st);
  if (from === a.confirmed) {
    st.server = [a.confirmed.data.x[0], a.confirmed.data.y[0]];
    answered(a, st);
  }
  // a followed drag's preview ends when the server says which view it has drawn (onLive): the
  // changes of a view arrive first, the view's version last
  if (st.q == null || st.fromLive) return;
  if (from === a.query) st.redraw = true;
  queueMicrotask(() => {
    if (st.q == null) return;
    if (st.dragging ? samePoint(st.server, st.q) : finished(a, st)) {
      if (!st.dragging) endPreview(a, st);
    } else if (st.redraw || st.inputs !== a.inputs.data) {
      applyPreview(a, st.q);
    } else {
      showReadout(a, st.text); // the server's text was for an earlier position; the plots are the preview's
    }
  });
}

// Following a room: a.live says which room's live channel to follow (room; "" for none), where the
// channel is (path, under the server's prefix), the page's ticket for it (ticket: the channel is this
// page's, server/room_live.py) and which of the room's views the server's numbers on this page show
// (version). The channel brings the presenter's query during a drag, tagged with the
// room's view it belongs to; the page previews each one for a later view than it shows, as if its own
// pointer had moved there. A text without a query (more than the query changed) makes the page wait
// for its server's numbers. The server sends the version last with each view it applies, so the
// preview ends there, with the server's data put back where the view did not change it.
function onLive(a, st) {
  const d = a.live.data, room = d.room[0], ticket = d.ticket?.[0] ?? "";
  st.shown = d.version[0];
  if (st.q != null && st.fromLive && !st.dragging && (st.previewed <= st.shown || !room))
    queueMicrotask(() => { if (st.q != null && st.fromLive) endPreview(a, st); });
  if (room === st.room && ticket === st.ticket) return;
  st.room = room;
  st.ticket = ticket;
  if (st.socket != null) st.socket.close();
  st.socket = null;
  st.retry = 1000;
  if (room && ticket) connectLive(a, st, room, d.path[0], ticket);
}

// These close codes say asking again would be refused again: a page that wrote (4400), no following page's
// ticket, or no such room (4403), the page has left the room (4404), replaced by this page's newer channel (4409).
const LIVE_FINAL = new Set([4400, 4403, 4404, 4409]);

function connectLive(a, st, room, path, ticket) {
  const url = new URL(path + "?room=" + encodeURIComponent(room), location.href);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  // the ticket goes as a subprotocol, as BokehJS sends its session token: never in an address or a log
  const socket = new WebSocket(url, ["explorer-live", ticket]);
  st.socket = socket;
  socket.onopen = () => { st.retry = 1000; };
  socket.onmessage = (e) => onLiveView(a, st, JSON.parse(e.data));
  socket.onclose = (e) => {
    // Otherwise (a restart, a dropped network, a full room) try again, less and less often; the server's
    // full views arrive without the channel all the same, only later.
    if (st.socket !== socket || LIVE_FINAL.has(e.code)) return;
    setTimeout(() => { if (st.socket === socket && st.room === room && st.ticket === ticket)
      connectLive(a, st, room, path, ticket); }, st.retry);
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
