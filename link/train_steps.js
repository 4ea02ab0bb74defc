// The Train tab's parts that change with a run, built once per run (build: the loss curve, the weights beside
// the target, W's tables, the planes), and every number and mark of a step, drawn in place (draw).

function build(ui) {
  const {model, st, words, scrub, lossSvg, weightsFig, targetFig, wTables, color} = ui;
  const run = st.run, w = words();
  const cells = ui.cells = {weights: [], target: [], w: [], outputs: []};
  scrub.max = String(run.steps);
  // the loss curve: drawn up to the step (the class watches it fall, not the run's end ahead of it), its axes the
  // whole run's, a dashed floor where one head stops, a marker at the step
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
  ui.curvePoints = run.loss.map((v, t) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`);
  const curve = ui.curve = svg_("path", {d: `M${ui.curvePoints[0]}`, class: "curve"});
  lossSvg.append(curve);
  const markerLine = ui.markerLine = svg_("line", {y1: T, y2: H - B, class: "marker-line"});
  const marker = ui.marker = svg_("circle", {r: 4.5, class: "marker"});
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
  buildPlanes(ui);
}

// Draw step t: every number and mark the page shows for it
function draw(ui, t) {
  const {model, st, words, cells, marker, markerLine, root, scrub, readout, swapOut, lossSvg, color} = ui;
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
  ui.curve.setAttribute("d", `M${ui.curvePoints.slice(0, t + 1).join("L")}`);
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
  drawPlanes(ui, shown);
}
