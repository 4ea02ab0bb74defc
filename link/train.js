// The Train tab, drawn by the page: a whole training run, sent once, played back here. The server's end is
// link/train.py (TrainLink); the run comes from core/training.py's train(), the texts from widgets/train.py.
//
// Drawn from what the server gives (model.settings, model.words, model.summary, model.message, model.run): the
// targets, the settings' controls, the player, the loss curve, the heads' average attention weights beside the
// target, W_Q, W_K (W_V, W_O) at the step shown, each head's queries and keys in a plane of its own (SVG, its
// labels placed clear of the marks), what was learned, and the downloads. Each animation frame while it plays
// (and at every step, pause and scrub) the step's numbers and marks are drawn again, in place; the page computes
// each step's queries, keys, weights, outputs and loss itself from X and the W's (forward, a mirror of the core's
// forward pass, checked against it in tests/ui/test_train.py), so the run needs only the W's of each step.
//
// Sent, sparingly: where the page is in the run ({step, playing, seq}, written into the document's report row
// "train-report", or as a message {action: "show", step, playing} where the row is not in the page) when a
// learner presses Play or Pause, when a scrub is let go and a moment after stepping stops (not when a run plays
// to its end by itself); never one per frame. A learner's choices as messages (model.send_msg): {action:
// "target" | "seed" | "learning_rate" | "temperature" | "scale" | "heads" | "paint" | "download", ...}
// (link/train.py's CHOICES).
//
// Received: `run` (a new run: the page shows model.step, playing if model.playing), and `step` / `playing` /
// `plays` (one more each time Play is pressed) changed by the server (a link, a presenter's page): the page
// goes there, and plays from there if it plays; {download, text} as a message: a file to save.

// Steps played a second: a run of 500 steps in about four seconds, at 60 frames a second (two steps a frame).
const STEPS_PER_SECOND = 120;
// Stepping with the keys or the buttons reports where it stopped this long after the last step (ms).
const SETTLE_MS = 400;

// --- the mirror of the core ----------------------------------------------------------------------------------

// One step's projections, from the run's flat arrays: {WQ, WK, WV} per head as rows of columns, WO or null.
export function stepWeights(run, t, swap = false) {
  const H = run.H, dv = run.d_v, heads = [];
  const wv = run.wv_trained ? t : 0;
  const mat = (flat, at, rows, cols) => {
    const m = [];
    for (let r = 0; r < rows; r++) {
      const row = [];
      for (let c = 0; c < cols; c++) row.push(flat[at + r * cols + c]);
      m.push(row);
    }
    return m;
  };
  for (let h = 0; h < H; h++) {
    const WQ = mat(run.WQ, (t * H + h) * 4, 2, 2), WK = mat(run.WK, (t * H + h) * 4, 2, 2);
    heads.push({WQ: swap ? WK : WQ, WK: swap ? WQ : WK, WV: mat(run.WV, (wv * H + h) * 2 * dv, 2, dv)});
  }
  const WO = run.has_WO ? mat(run.WO, t * H * dv * run.d_out, H * dv, run.d_out) : null;
  return {heads, WO};
}

const matmul = (A, B) => A.map((a) => B[0].map((_, c) => a.reduce((acc, x, k) => acc + x * B[k][c], 0)));

// core.training's forward pass and loss for one step (its _forward, _outputs and _loss, no mask):
//   run: X (flat n x 2), n, H, d_v, d_out, factor (s / T), kind ("weights" or "outputs"), target (flat);
//   w: stepWeights(run, t).
// Returns {heads: [{Q, K, V, weights}], weights (the heads' average, n x n), outputs (n x d), loss}; Q = X W_Q,
// K = X W_K and V = X W_V as the planes show them, the scores c Q K^T as the core computes them:
// (sqrt(c) X W_Q)(sqrt(c) X W_K)^T, c = s / T taken into the embeddings once.
export function forward(run, w) {
  const n = run.n, H = run.H;
  const X = [];
  for (let i = 0; i < n; i++) X.push([run.X[2 * i], run.X[2 * i + 1]]);
  const root = Math.sqrt(run.factor), Xs = X.map((x) => x.map((v) => root * v));
  const heads = [], logA = [];
  for (const {WQ, WK, WV} of w.heads) {
    const Qs = matmul(Xs, WQ), Ks = matmul(Xs, WK);
    const S = Qs.map((q) => Ks.map((k) => q[0] * k[0] + q[1] * k[1]));
    const weights = [], logs = [];
    for (const row of S) {
      const top = Math.max(...row), E = row.map((s) => Math.exp(s - top));
      const Z = E.reduce((a, b) => a + b, 0);
      weights.push(E.map((e) => e / Z));
      logs.push(row.map((s) => s - top - Math.log(Z)));
    }
    logA.push(logs);
    heads.push({Q: matmul(X, WQ), K: matmul(X, WK), V: matmul(X, WV), weights});
  }
  const avg = [];
  for (let i = 0; i < n; i++) {
    avg.push([]);
    for (let j = 0; j < n; j++) avg[i].push(heads.reduce((a, hd) => a + hd.weights[i][j], 0) / H);
  }
  const O = heads.map((hd) => matmul(hd.weights, hd.V));  // each head's outputs, n x d_v
  let outputs, loss = 0;
  if (run.kind === "weights") {
    outputs = O[0].map((row, i) => row.map((_, c) => O.reduce((a, o) => a + o[i][c], 0) / H));
    // -(1/n) sum P_ij log Abar_ij, log Abar as a log-sum-exp over the heads (core: _log_mean_weights)
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) {
      const p = run.target[i * n + j];
      if (p === 0) continue;
      const best = Math.max(...logA.map((l) => l[i][j]));
      const total = logA.reduce((a, l) => a + Math.exp(l[i][j] - best), 0);
      loss -= (p / n) * (best + Math.log(total / H));
    }
  } else {
    outputs = w.WO == null ? O[0] : matmul(O[0].map((_, i) => O.flatMap((o) => o[i])), w.WO);
    let sum = 0;
    outputs.forEach((y, i) => y.forEach((v, c) => { const r = v - run.target[i * run.d_out + c]; sum += r * r; }));
    loss = sum / n;
  }
  return {heads, weights: avg, outputs, loss};
}


// --- numbers in the page's language ---------------------------------------------------------------------------

// Every number as the rest of the page and the server write it: link/shared.js's fmtL and fmtShortL (with
// link/attention.js's fmt), which link/train.py puts before this script.
// A number as short as it is exact (a slider's stop, a tick): 0.005, 1, -1.5
const short = (x, words) => fmtShortL(x, 6, words);
const fill = (template, args) => template.replace(/\{(\w+)\}/g, (m, k) => (k in args ? String(args[k]) : m));

// --- the page's elements ----------------------------------------------------------------------------------------

function el_(tag, attrs = {}, text = null) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text != null) e.textContent = text;
  return e;
}

const SVG = "http://www.w3.org/2000/svg";
function svg_(tag, attrs = {}) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

// The run as the server sends it (arrays of numbers as typed arrays), with what the page works out once.
function unpack(model) {
  const r = model.run;
  if (r == null || r.steps == null) return null;
  const run = {...r};
  for (const k of ["X", "target", "WQ", "WK", "WV", "WO", "loss"]) run[k] = r[k] == null ? [] : Array.from(r[k]);
  run.tokens = Array.from(r.tokens);
  run.top = Math.max(...run.loss, run.floor ?? 0, 1e-9);
  return run;
}

// --- a head's plane ---------------------------------------------------------------------------------------------

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

// --- the tab ------------------------------------------------------------------------------------------------------

export function render({model, el, view}) {
  const doc = view.model.document;
  // BokehJS keeps the models a server patch brought (Document._new_models) as if the page had made them, until the
  // page sends a patch of its own, which then writes each of them it refers to out in full: the tab's first
  // message would carry this whole component, the run's arrays with it, which the server refuses
  // (server/transport.py) by closing the connection. They came from the server, which knows them.
  const known = (m) => { if (m != null) doc?._new_models?.delete(m); };
  known(view.model);
  known(view.model.data);
  const st = {run: null, step: 0, playing: false, pos: 0, last: 0, frame: 0, swap: false, sent: null,
              settle: 0, scrubbing: false, runs: 0, seq: 0, report: null};
  const words = () => model.words || {};
  const settings = () => model.settings || {};

  // --- the controls: targets, settings, the message ---
  const tab = el_("div", {class: "train-root"});
  const intro = el_("div", {class: "intro"});
  const targets = el_("div", {class: "train-targets", role: "group"});
  const targetButtons = {};
  const note = el_("p", {class: "target-note"});
  const row1 = el_("div", {class: "settings"});
  const newSeed = el_("button", {type: "button", class: "train-new-seed"});
  const seedText = el_("span", {class: "label seed"});
  const headsLabel = el_("span", {class: "label"});
  const headsGroup = el_("div", {class: "train-heads", role: "group"});
  const headButtons = [1, 2].map((h) => {
    const b = el_("button", {type: "button", "data-heads": h}, String(h));
    b.addEventListener("click", () => model.send_msg({action: "heads", heads: h}));
    headsGroup.append(b);
    return b;
  });
  row1.append(newSeed, seedText, headsLabel, headsGroup);
  const row2 = el_("div", {class: "settings"});
  const sliders = {};
  for (const name of ["learning_rate", "temperature"]) {
    const box = el_("label", {class: `slider train-${name === "learning_rate" ? "rate" : "temperature"}`});
    const text = el_("span", {class: "label"});
    const input = el_("input", {type: "range", min: "0", step: "1"});
    const out = el_("output", {class: "value"});
    box.append(text, input, out);
    row2.append(box);
    sliders[name] = {box, text, input, out, held: false};
    input.addEventListener("input", () => { sliders[name].held = true; out.textContent = short(stopOf(name), words()); });
    input.addEventListener("change", () => {  // let go, or a key: the server takes the stop
      sliders[name].held = false;
      model.send_msg({action: name, value: stopOf(name)});
    });
  }
  const scaleBox = el_("label", {class: "train-scale"});
  const scaleInput = el_("input", {type: "checkbox"});
  const scaleText = el_("span");
  scaleBox.append(scaleInput, scaleText);
  scaleInput.addEventListener("change", () => model.send_msg({action: "scale", on: scaleInput.checked}));
  row2.append(scaleBox);
  const message = el_("div", {class: "field-message", role: "alert"});
  newSeed.addEventListener("click", () => model.send_msg({action: "seed"}));

  function stopOf(name) {  // a slider's stop (not stop(send) below, which pauses the player)
    const stops = (model.stops || {})[name] || [];
    return stops[Math.max(0, Math.min(stops.length - 1, Number(sliders[name].input.value)))];
  }

  // --- the player's parts, made once ---
  // the player: Play and its readout on top, then the weights beside the target, the heads' planes, the loss with
  // the W's, and the choices, in lines as the tab's width lets them (static/train.css): on a wide tab (the Train tab
  // has the page: widgets/stage.py) Play, the loss, the weights beside the target and a plane in view together
  const root = el_("div", {class: "train-player"});
  const bar = el_("div", {class: "controls", role: "group", dir: "ltr"});
  const back = el_("button", {type: "button", class: "back"});
  const play = el_("button", {type: "button", class: "play primary"});
  const fwd = el_("button", {type: "button", class: "fwd"});
  const scrub = el_("input", {type: "range", class: "scrub", min: "0", max: "0", step: "1", value: "0"});
  const readout = el_("output", {class: "readout", "aria-live": "off"});
  bar.append(back, play, fwd, scrub, readout);
  const figs = el_("div", {class: "figs", dir: "ltr"});
  const lossFig = el_("figure", {class: "loss"});
  const lossCap = el_("figcaption");
  // wider than tall: under the weights on a 1024×768 projector, the curve and its ticks end above the screen's edge
  const lossSvg = svg_("svg", {viewBox: "0 0 320 150", role: "img", class: "loss-curve"});
  lossFig.append(lossCap, lossSvg);
  lossFig.dir = "ltr";
  const weightsFig = el_("figure", {class: "weights"});
  const targetFig = el_("figure", {class: "target"});
  figs.append(weightsFig, targetFig);
  const swapRow = el_("div", {class: "swap", dir: "ltr"});
  const swapLabel = el_("label");
  const swapBox = el_("input", {type: "checkbox", class: "swap-box"});
  const swapText = el_("span");
  swapLabel.append(swapBox, swapText);
  const swapOut = el_("output", {class: "swap-loss", "aria-live": "polite"});
  swapRow.append(swapLabel, swapOut);
  const wTables = el_("div", {class: "w-tables", dir: "ltr"});
  const planesBox = el_("div", {class: "planes", dir: "ltr"});
  // painting: on which sentence
  const sentence = el_("div", {class: "train-sentence", role: "group"});
  const sentenceLabel = el_("span", {class: "label"});
  sentence.append(sentenceLabel);
  const sentenceButtons = [3, 5].map((n) => {
    const b = el_("button", {type: "button", class: `train-sentence-${n}`, "data-tokens": n});
    b.addEventListener("click", () => model.send_msg({action: "sentence", tokens: n}));
    sentence.append(b);
    return b;
  });
  const numbers = el_("div", {class: "stage-numbers"});
  numbers.append(lossFig, swapRow, wTables);
  const choices = el_("div", {class: "stage-choices"});
  choices.append(targets, sentence, note, message);
  const stage = el_("div", {class: "train-stage"});
  stage.append(figs, planesBox, numbers, choices);
  root.append(bar, stage);

  // --- what was learned, Two heads, the downloads ---
  const summary = el_("div", {class: "train-summary"});
  const twoHeadsBox = el_("div", {class: "train-two-heads"});
  const twoHeads = el_("button", {type: "button", class: "primary"});
  twoHeadsBox.append(twoHeads);
  twoHeads.addEventListener("click", () => model.send_msg({action: "heads", heads: 2}));
  const downloads = el_("div", {class: "downloads"});
  const files = {};
  for (const kind of ["csv", "json"]) {
    const box = el_("span", {class: `train-${kind}`});
    const b = el_("button", {type: "button"});
    b.addEventListener("click", () => model.send_msg({action: "download", kind}));
    box.append(b);
    downloads.append(box);
    files[kind] = b;
  }
  tab.append(root, intro, row1, row2, summary, twoHeadsBox, downloads);
  el.append(tab);

  // --- the parts that change with a run: built once per run, filled at every step ---
  let cells = null;  // {weights: [[td]], target: [[button|td]], w: [{el, flat, at}], outputs: [[td]]}
  let marker = null, markerLine = null;
  let planes = [];   // per head: {svg, cap, frame, scale, points: [{el, role, i, kind}], labels: [{el, leader, i}]}

  function label() {
    const w = words();
    intro.innerHTML = w.intro ?? "";  // the server's HTML, its every text escaped there
    const names = w.targets ?? {};
    for (const [key, name] of Object.entries(names)) {
      let b = targetButtons[key];
      if (b == null) {
        b = targetButtons[key] = el_("button", {type: "button", class: `train-target train-target-${key}`});
        b.addEventListener("click", () => model.send_msg({action: "target", target: key}));
        targets.append(b);
      }
      b.textContent = name;
    }
    sentenceLabel.textContent = w.sentence ?? "";
    sentenceButtons.forEach((b) => { b.textContent = (w.sentences ?? {})[b.dataset.tokens] ?? ""; });
    newSeed.textContent = w.new_seed ?? "";
    newSeed.title = w.new_seed_label ?? "";
    headsLabel.textContent = w.heads ?? "";
    sliders.learning_rate.text.textContent = w.learning_rate ?? "";
    sliders.temperature.text.textContent = w.temperature ?? "";
    scaleText.textContent = " " + (w.scale ?? "");
    twoHeads.textContent = w.two_heads ?? "";
    twoHeads.title = w.two_heads_label ?? "";
    files.csv.textContent = w.csv ?? "";
    files.json.textContent = w.json ?? "";
    back.textContent = w.back ?? "◀";
    back.setAttribute("aria-label", w.back_label ?? "");
    back.title = w.back_label ?? "";
    fwd.textContent = w.fwd ?? "▶";
    fwd.setAttribute("aria-label", w.fwd_label ?? "");
    fwd.title = w.fwd_label ?? "";
    play.textContent = st.playing ? (w.pause ?? "Pause") : (w.play ?? "Play");
    play.setAttribute("aria-pressed", st.playing ? "true" : "false");
    scrub.setAttribute("aria-label", w.scrub ?? "Step");
    swapText.textContent = " " + (w.swap ?? "");
    lossCap.textContent = w.loss_caption ?? "";
    syncSettings();
  }

  // the controls show the server's settings (a slider held by the learner keeps its place until let go)
  function syncSettings() {
    const s = settings(), w = words();
    for (const [key, b] of Object.entries(targetButtons)) {
      const on = key === s.target;
      b.classList.toggle("primary", on);
      b.setAttribute("aria-pressed", on ? "true" : "false");
    }
    note.textContent = (w.notes ?? {})[s.target] ?? "";
    sentence.hidden = s.target !== "paint";
    sentenceButtons.forEach((b) => b.setAttribute("aria-pressed", String(Number(b.dataset.tokens) === st.run?.n)));
    seedText.textContent = fill(w.seed ?? "seed {seed}", {seed: s.seed ?? 0});
    headButtons.forEach((b, k) => b.setAttribute("aria-pressed", k + 1 === s.heads ? "true" : "false"));
    for (const name of ["learning_rate", "temperature"]) {
      const sl = sliders[name], stops = (model.stops || {})[name] || [];
      sl.input.max = String(Math.max(0, stops.length - 1));
      if (!sl.held && s[name] != null && stops.length) {
        // the stop nearest on a log scale (session/training.py's nearest)
        let k = 0;
        stops.forEach((x, j) => { if (Math.abs(Math.log(x / s[name])) < Math.abs(Math.log(stops[k] / s[name]))) k = j; });
        sl.input.value = String(k);
        sl.out.textContent = short(stops[k], w);
      }
    }
    scaleInput.checked = !!s.scale;
  }

  function showSummary() {
    summary.innerHTML = model.summary ?? "";  // the server's HTML, its every text escaped there
    twoHeadsBox.hidden = !model.two_heads;
  }
  function showMessage() {
    message.textContent = model.message ?? "";
    message.hidden = !model.message;
  }

  function build() {
    const run = st.run, w = words();
    cells = {weights: [], target: [], w: [], outputs: []};
    scrub.max = String(run.steps);
    // the loss curve: the whole run, a dashed floor where one head stops, a marker at the step
    lossSvg.replaceChildren();
    // room for tick labels in the page's number size (22 px on a projector: static/train.css)
    // the left margin as wide as the loss's tick labels in the curve's text size: "19.74" (Retrieve the value's start)
    // lost its 1 at the figure's edge
    const ticks = [0, run.top].map((v) => fmtL(v, 2, w));
    const em = parseFloat(getComputedStyle(lossSvg).fontSize) || 16;
    const W = 320, H = 150, B = 30, T = 12, R = 10;
    const L = Math.max(56, Math.ceil(0.62 * em * Math.max(...ticks.map((t) => t.length))) + 8);
    const x = (t) => L + (t / run.steps) * (W - L - R), y = (v) => T + (1 - v / run.top) * (H - T - B);
    lossSvg.append(svg_("line", {x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis"}),
                   svg_("line", {x1: L, y1: T, x2: L, y2: H - B, class: "axis"}));
    [0, run.top].forEach((v, k) => {
      const t = svg_("text", {x: L - 5, y: y(v) + 6, "text-anchor": "end", class: "tick"});
      t.textContent = ticks[k];
      lossSvg.append(t);
    });
    // the first step's 0 starts at the axis: centred on it, it touched the loss's 0.00 beside it (22 px ticks)
    const t0 = svg_("text", {x: L, y: H - 6, "text-anchor": "start", class: "tick"});
    t0.textContent = "0";
    const t1 = svg_("text", {x: W - R, y: H - 6, "text-anchor": "end", class: "tick"});
    t1.textContent = String(run.steps);
    lossSvg.append(t0, t1);
    if (run.floor != null) {
      lossSvg.append(svg_("line", {x1: L, x2: W - R, y1: y(run.floor), y2: y(run.floor), class: "floor"}));
    }
    const d = run.loss.map((v, t) => `${t ? "L" : "M"}${x(t).toFixed(1)},${y(v).toFixed(1)}`).join("");
    lossSvg.append(svg_("path", {d, class: "curve"}));
    markerLine = svg_("line", {y1: T, y2: H - B, class: "marker-line"});
    marker = svg_("circle", {r: 4.5, class: "marker"});
    lossSvg.append(markerLine, marker);
    lossSvg.setAttribute("aria-label", fill(w.loss_aria ?? "", {first: fmtL(run.loss[0], 4, w),
                                                               last: fmtL(run.loss[run.steps], 4, w)}));
    lossSvg._x = x;
    lossSvg._y = y;

    // the weights at the step, the target beside them (its cells buttons when the learner paints it)
    const n = run.n, tokens = run.tokens;
    const grid = (fig, caption, kind) => {
      fig.replaceChildren();
      const cap = el_("figcaption", {}, caption);
      // five tokens' names read upwards over their columns: the weights and the target side by side fit a
      // projector's screen with a plane beside them (static/train.css)
      const table = el_("table", {class: `matrix ${kind}${n > 3 ? " long" : ""}`});
      const head = el_("tr");
      head.append(el_("th", {class: "corner"}));
      tokens.forEach((t) => { const th = el_("th", {scope: "col"}); th.append(el_("span", {}, t)); head.append(th); });
      table.append(head);
      const rows = [];
      tokens.forEach((t, i) => {
        const tr = el_("tr");
        tr.append(el_("th", {scope: "row"}, t));
        const row = [];
        for (let j = 0; j < n; j++) {
          const td = el_("td", {"data-i": i, "data-j": j});
          if (kind === "target" && model.paintable) {
            const b = el_("button", {type: "button", class: "paint", "data-i": i, "data-j": j,
                                     "aria-label": fill(w.paint_cell ?? "{query} → {key}", {query: t, key: tokens[j]})});
            b.addEventListener("click", () => model.send_msg({action: "paint", row: i, col: j}));
            td.append(b);
            row.push(b);
          } else row.push(td);
          tr.append(td);
        }
        rows.push(row);
        table.append(tr);
      });
      fig.append(cap, table);
      return rows;
    };
    if (run.kind === "weights") {
      cells.weights = grid(weightsFig, (run.H > 1 ? w.weights_caption : w.weights_caption_one) ?? "", "weights");
      cells.target = grid(targetFig, model.paintable ? (w.paint_caption ?? "") : (w.target_caption ?? ""), "target");
      run.target.forEach((p, k) => {
        const c = cells.target[Math.floor(k / n)][k % n];
        c.textContent = fmtL(p, 2, w);
        c.style.background = color(p);
        c.classList.toggle("ink-dark", p >= model.ink_threshold);
        c.classList.toggle("wanted", p > 0);
        cells.weights[Math.floor(k / n)][k % n].classList.toggle("wanted", p > 0);
      });
    } else {
      cells.weights = grid(weightsFig, (run.H > 1 ? w.weights_caption : w.weights_caption_one) ?? "", "weights");
      targetFig.replaceChildren();
      const cap = el_("figcaption", {}, w.outputs_caption ?? "");
      const table = el_("table", {class: "matrix outputs"});
      const head = el_("tr");
      head.append(el_("th"), el_("th", {scope: "col"}, w.output ?? "output"), el_("th", {scope: "col"}, w.wanted ?? "target"));
      table.append(head);
      tokens.forEach((t, i) => {
        const tr = el_("tr");
        const out = el_("td", {"data-output": i});
        const want = el_("td", {}, Array.from({length: run.d_out}, (_, c) => fmtL(run.target[i * run.d_out + c], 2, w)).join(", "));
        tr.append(el_("th", {scope: "row"}, t), out, want);
        cells.outputs.push(out);
        table.append(tr);
      });
      targetFig.append(cap, table);
    }
    // W at the step: one small table per matrix and head
    wTables.replaceChildren();
    const trained = ["W_Q", "W_K", ...(run.wv_trained ? ["W_V"] : [])];
    for (let h = 0; h < run.H; h++) {
      for (const name of trained) {
        const cols = name === "W_V" ? run.d_v : 2;
        const table = el_("table", {class: "nums w", "data-w": name, "data-h": h});
        const cap = el_("caption");
        cap.innerHTML = name.replace("_", "<sub>") + "</sub>" + (run.H > 1 ? " · " + fill(w.head ?? "head {n}", {n: h + 1}) : "");
        table.append(cap);
        for (let r = 0; r < 2; r++) {
          const tr = el_("tr");
          for (let c = 0; c < cols; c++) {
            const td = el_("td", {"data-r": r, "data-c": c});
            cells.w.push({td, name, h, r, c});
            tr.append(td);
          }
          table.append(tr);
        }
        wTables.append(table);
      }
    }
    if (run.has_WO) {
      const table = el_("table", {class: "nums w", "data-w": "W_O", "data-h": 0});
      const cap = el_("caption");
      cap.innerHTML = "W<sub>O</sub>";
      table.append(cap);
      for (let r = 0; r < run.H * run.d_v; r++) {
        const tr = el_("tr");
        for (let c = 0; c < run.d_out; c++) {
          const td = el_("td", {"data-r": r, "data-c": c});
          cells.w.push({td, name: "W_O", h: 0, r, c});
          tr.append(td);
        }
        table.append(tr);
      }
      wTables.append(table);
    }
    buildPlanes();
  }

  // Each head's plane: its queries (●), keys (■) and, when W_V learns 2-D values, values (▲) at the step shown,
  // in ranges that hold the whole run. Drawn in CSS px at the figure's width (the text at the page's number size).
  function buildPlanes() {
    const run = st.run, w = words();
    planesBox.replaceChildren();
    planes = [];
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

  const tokenColor = (i) => (model.colors || [])[i % Math.max(1, (model.colors || []).length)] ?? "#555555";

  // the plane's frame at its current width and text size: scales from data to px, and its grid and ticks when
  // either changed (a resize, projector mode)
  function layoutPlane(p) {
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
  function drawPlanes(f) {
    planes.forEach((p, h) => {
      if (!layoutPlane(p)) return;
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

  const palette = () => model.palette || [];
  function color(v) {
    const p = palette();
    return p.length ? p[Math.min(p.length - 1, Math.max(0, Math.floor(v * p.length)))] : "";
  }

  // Draw step t: every number and mark the page shows for it
  function draw(t) {
    const run = st.run, w = words();
    if (run == null || cells == null) return;
    t = Math.max(0, Math.min(run.steps, t));
    st.step = t;
    const sw = stepWeights(run, t), f = forward(run, sw);
    const shown = st.swap ? forward(run, stepWeights(run, t, true)) : f;
    root.dataset.step = String(t);
    if (!st.scrubbing) scrub.value = String(t);
    readout.textContent = fill(w.readout ?? "{step} / {steps} · {loss}", {step: t, steps: run.steps,
                                                                          loss: fmtL(f.loss, 4, w)});
    readout.dataset.loss = String(f.loss);
    const swapped = forward(run, stepWeights(run, t, true)).loss;
    swapOut.textContent = st.swap ? fill(w.swapped ?? "{loss} → {swapped}", {loss: fmtL(f.loss, 4, w),
                                                                             swapped: fmtL(swapped, 4, w)}) : "";
    swapOut.dataset.loss = String(swapped);
    const x = lossSvg._x(t), y = lossSvg._y(f.loss);
    marker.setAttribute("cx", x.toFixed(1));
    marker.setAttribute("cy", y.toFixed(1));
    markerLine.setAttribute("x1", x.toFixed(1));
    markerLine.setAttribute("x2", x.toFixed(1));
    shown.weights.forEach((row, i) => row.forEach((v, j) => {
      const td = cells.weights[i][j];
      const text = fmtL(v, 2, w);
      if (td.textContent !== text) td.textContent = text;
      td.dataset.value = String(v);
      td.style.background = color(v);
      td.classList.toggle("ink-dark", v >= model.ink_threshold);
    }));
    cells.outputs.forEach((td, i) => {
      td.textContent = shown.outputs[i].map((v) => fmtL(v, 2, w)).join(", ");
      td.dataset.value = JSON.stringify(shown.outputs[i]);
    });
    for (const c of cells.w) {
      const m = c.name === "W_O" ? sw.WO : sw.heads[c.h][c.name === "W_Q" ? "WQ" : c.name === "W_K" ? "WK" : "WV"];
      const v = m[c.r][c.c];
      c.td.textContent = fmtL(v, 2, w);
      c.td.dataset.value = String(v);
    }
    drawPlanes(shown);
  }

  // --- playing, stepping, scrubbing, and what goes to the server ---
  function report(playing) {
    st.sent = {step: st.step, playing};
    // the report row is a root of the served page's document (link/train.py): a write is one property's change
    if (st.report == null || st.report.document == null) {
      st.report = doc?.get_model_by_name("train-report") ?? null;
      known(st.report);
    }
    if (st.report != null) {
      st.seq += 1;  // a new value each time: the same step and state again is still a press
      st.report.data = {step: [st.step], playing: [playing], seq: [st.seq]};
    } else model.send_msg({action: "show", step: st.step, playing});
  }

  function tick(now) {
    if (!st.playing) return;
    const dt = Math.min(0.1, (now - st.last) / 1000);  // a hidden tab's long pause does not jump to the end
    st.last = now;
    st.pos = Math.min(st.run.steps, st.pos + dt * STEPS_PER_SECOND);
    const t = Math.floor(st.pos);
    if (t !== st.step) draw(t);
    if (st.pos >= st.run.steps) {
      // the end is not a learner's act: nothing is sent (a page following a presenter would leave the room)
      stop(false);
      return;
    }
    st.frame = requestAnimationFrame(tick);
  }

  function start(from, send) {
    if (st.run == null) return;
    if (from >= st.run.steps) from = 0;  // Play at the end plays again from the random start
    st.playing = true;
    st.pos = from;
    draw(from);
    label();
    if (send) report(true);
    st.last = performance.now();
    cancelAnimationFrame(st.frame);
    st.frame = requestAnimationFrame(tick);
  }

  function stop(send) {
    const was = st.playing;
    st.playing = false;
    cancelAnimationFrame(st.frame);
    label();
    if (send && (was || st.sent?.step !== st.step)) report(false);
  }

  function stepBy(k) {
    if (st.run == null) return;
    if (st.playing) stop(false);
    draw(st.step + k);
    st.pos = st.step;
    clearTimeout(st.settle);
    st.settle = setTimeout(() => report(false), SETTLE_MS);  // one message when the stepping stops
  }

  play.addEventListener("click", () => (st.playing ? stop(true) : start(st.step, true)));
  back.addEventListener("click", () => stepBy(-1));
  fwd.addEventListener("click", () => stepBy(1));
  scrub.addEventListener("input", () => {
    st.scrubbing = true;
    if (st.playing) stop(false);
    draw(Number(scrub.value));
    st.pos = st.step;
  });
  scrub.addEventListener("change", () => {  // let go (or a key on the slider): one message
    st.scrubbing = false;
    draw(Number(scrub.value));
    report(false);
  });
  swapBox.addEventListener("change", () => { st.swap = swapBox.checked; draw(st.step); });

  // Space plays and pauses, ← → step (Shift: ten steps), while this tab is shown and focus is not in a text
  // field, a button or the query plot; the explorer's own shortcuts (link/browser.py) see the key as taken
  const TEXT = new Set(["INPUT", "TEXTAREA", "SELECT"]);
  const onKey = (e) => {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || !root.isConnected) return;
    if (bar.getClientRects().length === 0) return;  // the tab is hidden (the player may have no box of its own)
    if (e.key !== " " && e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
    const path = e.composedPath(), target = path[0];
    if (target instanceof Element) {
      if (target.isContentEditable || (TEXT.has(target.tagName) && !(target.tagName === "INPUT" &&
          (target.type === "checkbox" || target.type === "radio")))) return;
      if (e.key === " " && (target.tagName === "BUTTON" || target.tagName === "INPUT")) return;
      if (target.tagName === "INPUT" && target.type === "radio") return;
      const role = target.getAttribute("role");
      if (role && ["slider", "tab", "tablist", "radiogroup", "listbox", "spinbutton"].includes(role)) return;
    }
    if (path.some((n) => n.classList && n.classList.contains("ae-query-plot"))) return;
    e.preventDefault();
    if (e.key === " ") (st.playing ? stop(true) : start(st.step, true));
    else stepBy((e.key === "ArrowRight" ? 1 : -1) * (e.shiftKey ? 10 : 1));
  };
  document.addEventListener("keydown", onKey, true);  // before the page's bridge, which leaves a taken key alone

  // a plane follows the tab's width (a rotated phone, a resized window) and the text's size (projector mode,
  // which makes the captions above the planes taller too)
  let planesSize = "";
  const resized = new ResizeObserver(() => {
    const size = `${Math.round(planesBox.getBoundingClientRect().width)} ${getComputedStyle(planesBox).fontSize}`;
    if (size === planesSize) return;
    planesSize = size;
    if (st.run != null && cells != null) draw(st.step);
  });
  resized.observe(planesBox);

  // what the server says: a new run, or a step and play state set elsewhere (a link, a presenter)
  function follow() {
    const step = model.step, playing = model.playing;
    if (st.sent != null && st.sent.step === step && st.sent.playing === playing) return;  // our own report
    st.sent = null;
    if (playing) start(step, false);
    else { stop(false); draw(step); st.pos = st.step; }
  }
  function newRun() {
    st.run = unpack(model);
    st.runs += 1;  // the tests wait on it: a run has arrived
    stop(false);
    if (st.run == null) return;
    build();
    label();
    st.sent = null;
    follow();
    if (!model.playing && st.step !== model.step) draw(model.step);
  }
  model.on("run", newRun);
  model.on(["step", "playing", "plays"], follow);
  model.on("words", () => { label(); showMessage(); if (st.run) { build(); draw(st.step); } });
  model.on("paintable", () => { if (st.run) { build(); draw(st.step); } });
  model.on("settings", syncSettings);
  model.on(["summary", "two_heads"], showSummary);
  model.on("message", showMessage);
  model.on("msg:custom", (msg) => {  // a file the learner asked for
    if (msg == null || typeof msg.download !== "string") return;
    const type = msg.download.endsWith(".csv") ? "text/csv" : "application/json";
    const a = el_("a", {download: msg.download, href: URL.createObjectURL(new Blob([msg.text], {type}))});
    tab.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60000);
  });
  model.on("remove", () => {
    cancelAnimationFrame(st.frame);
    clearTimeout(st.settle);
    resized.disconnect();
    document.removeEventListener("keydown", onKey, true);
  });
  // the tests' and the mirror check's way in
  root.trainMirror = {forward, stepWeights, run: () => st.run, state: st, root};
  window.attentionExplorerTrain = root.trainMirror;
  label();
  showSummary();
  showMessage();
  newRun();
  // the tab is laid out after this view is made: draw the step at its size once it is there
  requestAnimationFrame(() => draw(st.step));
}
