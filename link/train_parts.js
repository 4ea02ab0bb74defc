// The Train tab's parts, made once when the page draws the tab (trainParts): the targets, the settings' controls,
// the player and its figures, what was learned and the downloads; and their texts and settings as the server
// gives them (label, syncSettings, showSummary, showMessage). The parts are one object, `ui`, which
// train_steps.js, train_plane.js and train.js draw into.

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

// The tab's elements, appended to `el`, and the state the player keeps (st).
function trainParts(model, el) {
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

  function stopOf(name) {  // a slider's stop (not train.js's stop(send), which pauses the player)
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

  const palette = () => model.palette || [];
  function color(v) {
    const p = palette();
    return p.length ? p[Math.min(p.length - 1, Math.max(0, Math.floor(v * p.length)))] : "";
  }
  const tokenColor = (i) => (model.colors || [])[i % Math.max(1, (model.colors || []).length)] ?? "#555555";

  return {model, st, words, settings, tab, intro, targets, targetButtons, note, newSeed, seedText, headsLabel,
          headButtons, sliders, scaleInput, scaleText, message, root, bar, back, play, fwd, scrub, readout,
          lossSvg, lossCap, weightsFig, targetFig, swapBox, swapText, swapOut, wTables, planesBox, sentence,
          sentenceLabel, sentenceButtons, summary, twoHeadsBox, twoHeads, files, color, tokenColor,
          // the parts that change with a run: built once per run (train_steps.js's build), filled at every step
          cells: null,  // {weights: [[td]], target: [[button|td]], w: [{td, name, h, r, c}], outputs: [[td]]}
          marker: null, markerLine: null,
          planes: []};  // per head: {svg, grid, range, points: [{el, role, i}], labels: [{el, leader, i, size}]}
}

function label(ui) {
  const {model, st, words, intro, targets, targetButtons, sentenceLabel, sentenceButtons, newSeed, headsLabel,
         sliders, scaleText, twoHeads, files, back, fwd, play, scrub, swapText, lossCap} = ui;
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
  syncSettings(ui);
}

// the controls show the server's settings (a slider held by the learner keeps its place until let go)
function syncSettings(ui) {
  const {model, st, words, settings, targetButtons, note, sentence, sentenceButtons, seedText, headButtons,
         sliders, scaleInput} = ui;
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

function showSummary({model, summary, twoHeadsBox}) {
  summary.innerHTML = model.summary ?? "";  // the server's HTML, its every text escaped there
  twoHeadsBox.hidden = !model.two_heads;
}
function showMessage({model, message}) {
  message.textContent = model.message ?? "";
  message.hidden = !model.message;
}
