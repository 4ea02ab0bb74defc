// The Train tab's player: a whole training run, sent once, played back in the page. The server's end is
// link/train.py (TrainLink); the run comes from core/training.py's train().
//
// Drawn, each animation frame while it plays (and at every step, pause and scrub): the step and its loss, the
// loss curve's marker, the heads' average attention weights beside the target, W_Q, W_K (W_V, W_O) at that
// step, and each head's queries and keys in its plane (the Bokeh figures the server drew, whose data this
// script changes in place: nothing it draws goes back to the server). The page computes each step's queries,
// keys, weights, outputs and loss itself from X and the W's (forward, a mirror of the core's forward pass,
// checked against it in tests/ui/test_train.py), so the run needs only the W's of each step.
//
// Sent (model.send_msg), sparingly: {action: "show", step, playing} when a learner presses Play or Pause,
// when a scrub is let go and a moment after stepping stops (not when a run plays to its end by itself); {action: "paint", row, col} for a click on a
// painted target's cell. Never one per frame.
//
// Received: `run` (a new run: the page shows model.step, playing if model.playing), and `step` / `playing` /
// `plays` (one more each time Play is pressed) changed by the server (a link, a presenter's page): the page
// goes there, and plays from there if it plays.

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

function fmt(x, d, words) {
  let s = x.toFixed(d);
  if (s.startsWith("-") && Number(s) === 0) s = s.slice(1);  // never "-0.00"
  s = s.replace("-", "\u2212");
  return words.decimal === "." ? s : s.replace(".", words.decimal);
}
const fill = (template, args) => template.replace(/\{(\w+)\}/g, (m, k) => (k in args ? String(args[k]) : m));

// --- the player ------------------------------------------------------------------------------------------------

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

export function render({model, el, view}) {
  const doc = view.model.document;
  const st = {run: null, step: 0, playing: false, pos: 0, last: 0, frame: 0, swap: false, sent: null,
              settle: 0, scrubbing: false, runs: 0};
  const words = () => model.words || {};

  // --- the page's parts, made once ---
  const root = el_("div", {class: "train-player", dir: "ltr"});
  const bar = el_("div", {class: "controls", role: "group"});
  const back = el_("button", {type: "button", class: "back"});
  const play = el_("button", {type: "button", class: "play primary"});
  const fwd = el_("button", {type: "button", class: "fwd"});
  const scrub = el_("input", {type: "range", class: "scrub", min: "0", max: "0", step: "1", value: "0"});
  const readout = el_("output", {class: "readout", "aria-live": "off"});
  bar.append(back, play, fwd, scrub, readout);
  const figs = el_("div", {class: "figs"});
  const lossFig = el_("figure", {class: "loss"});
  const lossCap = el_("figcaption");
  const lossSvg = svg_("svg", {viewBox: "0 0 320 170", role: "img", class: "loss-curve"});
  lossFig.append(lossCap, lossSvg);
  const weightsFig = el_("figure", {class: "weights"});
  const targetFig = el_("figure", {class: "target"});
  figs.append(lossFig, weightsFig, targetFig);
  const swapRow = el_("div", {class: "swap"});
  const swapLabel = el_("label");
  const swapBox = el_("input", {type: "checkbox", class: "swap-box"});
  const swapText = el_("span");
  swapLabel.append(swapBox, swapText);
  const swapOut = el_("output", {class: "swap-loss", "aria-live": "polite"});
  swapRow.append(swapLabel, swapOut);
  const wTables = el_("div", {class: "w-tables"});
  root.append(bar, figs, swapRow, wTables);
  el.append(root);

  // --- the parts that change with a run: built once per run, filled at every step ---
  let cells = null;  // {weights: [[td]], target: [[button|td]], w: [{el, flat, at}], outputs: [[td]]}
  let marker = null, markerLine = null;

  function label() {
    const w = words();
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
  }

  function build() {
    const run = st.run, w = words();
    cells = {weights: [], target: [], w: [], outputs: []};
    scrub.max = String(run.steps);
    // the loss curve: the whole run, a dashed floor where one head stops, a marker at the step
    lossSvg.replaceChildren();
    // room for tick labels in the page's number size (22 px on a projector: static/train.css)
    const W = 320, H = 170, L = 56, B = 30, T = 12, R = 10;
    const x = (t) => L + (t / run.steps) * (W - L - R), y = (v) => T + (1 - v / run.top) * (H - T - B);
    lossSvg.append(svg_("line", {x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis"}),
                   svg_("line", {x1: L, y1: T, x2: L, y2: H - B, class: "axis"}));
    for (const [v, anchor] of [[0, "end"], [run.top, "end"]]) {
      const t = svg_("text", {x: L - 5, y: y(v) + 6, "text-anchor": anchor, class: "tick"});
      t.textContent = fmt(v, 2, w);
      lossSvg.append(t);
    }
    const t0 = svg_("text", {x: L, y: H - 6, "text-anchor": "middle", class: "tick"});
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
    lossSvg.setAttribute("aria-label", fill(w.loss_aria ?? "", {first: fmt(run.loss[0], 4, w),
                                                               last: fmt(run.loss[run.steps], 4, w)}));
    lossSvg._x = x;
    lossSvg._y = y;

    // the weights at the step, the target beside them (its cells buttons when the learner paints it)
    const n = run.n, tokens = run.tokens;
    const grid = (fig, caption, kind) => {
      fig.replaceChildren();
      const cap = el_("figcaption", {}, caption);
      const table = el_("table", {class: `matrix ${kind}`});
      const head = el_("tr");
      head.append(el_("th"));
      tokens.forEach((t) => head.append(el_("th", {scope: "col"}, t)));
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
      cells.weights = grid(weightsFig, w.weights_caption ?? "", "weights");
      cells.target = grid(targetFig, model.paintable ? (w.paint_caption ?? "") : (w.target_caption ?? ""), "target");
      run.target.forEach((p, k) => {
        const c = cells.target[Math.floor(k / n)][k % n];
        c.textContent = fmt(p, 2, w);
        c.style.background = color(p);
        c.classList.toggle("ink-dark", p >= 0.55);
        c.classList.toggle("wanted", p > 0);
        cells.weights[Math.floor(k / n)][k % n].classList.toggle("wanted", p > 0);
      });
    } else {
      cells.weights = grid(weightsFig, w.weights_caption ?? "", "weights");
      targetFig.replaceChildren();
      const cap = el_("figcaption", {}, w.outputs_caption ?? "");
      const table = el_("table", {class: "matrix outputs"});
      const head = el_("tr");
      head.append(el_("th"), el_("th", {scope: "col"}, w.output ?? "output"), el_("th", {scope: "col"}, w.wanted ?? "target"));
      table.append(head);
      tokens.forEach((t, i) => {
        const tr = el_("tr");
        const out = el_("td", {"data-output": i});
        const want = el_("td", {}, Array.from({length: run.d_out}, (_, c) => fmt(run.target[i * run.d_out + c], 2, w)).join(", "));
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
  }

  const palette = () => model.palette || [];
  function color(v) {
    const p = palette();
    return p.length ? p[Math.min(p.length - 1, Math.max(0, Math.floor(v * p.length)))] : "";
  }

  // the planes the server drew (link/train.py names their sources train-points-<h>)
  function planes() {
    const out = [];
    for (let h = 0; h < (st.run?.H ?? 0); h++) {
      const src = doc.get_model_by_name(`train-points-${h}`);
      if (src != null) out.push(src);
    }
    return out;
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
                                                                          loss: fmt(f.loss, 4, w)});
    readout.dataset.loss = String(f.loss);
    const swapped = forward(run, stepWeights(run, t, true)).loss;
    swapOut.textContent = st.swap ? fill(w.swapped ?? "{loss} → {swapped}", {loss: fmt(f.loss, 4, w),
                                                                             swapped: fmt(swapped, 4, w)}) : "";
    swapOut.dataset.loss = String(swapped);
    const x = lossSvg._x(t), y = lossSvg._y(f.loss);
    marker.setAttribute("cx", x.toFixed(1));
    marker.setAttribute("cy", y.toFixed(1));
    markerLine.setAttribute("x1", x.toFixed(1));
    markerLine.setAttribute("x2", x.toFixed(1));
    shown.weights.forEach((row, i) => row.forEach((v, j) => {
      const td = cells.weights[i][j];
      const text = fmt(v, 2, w);
      if (td.textContent !== text) td.textContent = text;
      td.dataset.value = String(v);
      td.style.background = color(v);
      td.classList.toggle("ink-dark", v >= 0.55);
    }));
    cells.outputs.forEach((td, i) => {
      td.textContent = shown.outputs[i].map((v) => fmt(v, 2, w)).join(", ");
      td.dataset.value = JSON.stringify(shown.outputs[i]);
    });
    for (const c of cells.w) {
      const m = c.name === "W_O" ? sw.WO : sw.heads[c.h][c.name === "W_Q" ? "WQ" : c.name === "W_K" ? "WK" : "WV"];
      const v = m[c.r][c.c];
      c.td.textContent = fmt(v, 2, w);
      c.td.dataset.value = String(v);
    }
    planes().forEach((src, h) => {
      const hd = shown.heads[h], P = [...hd.Q, ...hd.K, ...(run.wv_trained ? hd.V : [])];
      const d = src.data;
      if (d.x == null || d.x.length !== P.length) return;
      P.forEach((p, k) => { d.x[k] = p[0]; d.y[k] = p[1]; });
      src.change.emit();  // redrawn in place: never sent to the server
    });
  }

  // --- playing, stepping, scrubbing, and what goes to the server ---
  function report(playing) {
    st.sent = {step: st.step, playing};
    model.send_msg({action: "show", step: st.step, playing});
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
    if (root.getClientRects().length === 0) return;  // the tab is hidden
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
  model.on(["words", "paintable"], () => { label(); if (st.run) { build(); draw(st.step); } });
  model.on("remove", () => {
    cancelAnimationFrame(st.frame);
    clearTimeout(st.settle);
    document.removeEventListener("keydown", onKey, true);
  });
  // the tests' and the mirror check's way in
  root.trainMirror = {forward, stepWeights, run: () => st.run, state: st, root};
  window.attentionExplorerTrain = root.trainMirror;
  label();
  newRun();
  // the planes are drawn after this view at first: draw the step into them once they are there
  requestAnimationFrame(() => draw(st.step));
}
