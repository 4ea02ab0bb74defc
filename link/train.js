// The Train tab, drawn by the page: a whole training run, sent once, played back here. The server's end is
// link/train.py (TrainLink); the run comes from core/training/'s train(), the texts from widgets/train.py.
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
//
// The page runs link/train.py's TRAIN_SCRIPTS as one module, in this order: link/attention.js and link/shared.js
// (the page's number format), train_mirror.js (the core's forward pass), train_plane.js (the heads' planes),
// train_parts.js (the tab's elements, made once), train_steps.js (a run's parts, a step's numbers), then this
// file (the player, the keys, and what goes to and from the server).

// Steps played a second: a run of 500 steps in about four seconds, at 60 frames a second (two steps a frame).
const STEPS_PER_SECOND = 120;
// Stepping with the keys or the buttons reports where it stopped this long after the last step (ms).
const SETTLE_MS = 400;

// --- the tab ------------------------------------------------------------------------------------------------------

export function render({model, el, view}) {
  const doc = view.model.document;
  // BokehJS keeps the models a server patch brought (Document._new_models) as if the page had made them, until the
  // page sends a patch of its own, which then writes each of them it refers to out in full: the tab's first
  // message would carry this whole component, the run's arrays with it, which the server refuses
  // (server/guard.py) by closing the connection. They came from the server, which knows them.
  const known = (m) => { if (m != null) doc?._new_models?.delete(m); };
  known(view.model);
  known(view.model.data);
  const ui = trainParts(model, el);
  const {st, root, bar, play, back, fwd, scrub, swapBox, planesBox, tab} = ui;

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
    if (t !== st.step) draw(ui, t);
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
    draw(ui, from);
    label(ui);
    if (send) report(true);
    st.last = performance.now();
    cancelAnimationFrame(st.frame);
    st.frame = requestAnimationFrame(tick);
  }

  function stop(send) {
    const was = st.playing;
    st.playing = false;
    cancelAnimationFrame(st.frame);
    label(ui);
    if (send && (was || st.sent?.step !== st.step)) report(false);
  }

  function stepBy(k) {
    if (st.run == null) return;
    if (st.playing) stop(false);
    draw(ui, st.step + k);
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
    draw(ui, Number(scrub.value));
    st.pos = st.step;
  });
  scrub.addEventListener("change", () => {  // let go (or a key on the slider): one message
    st.scrubbing = false;
    draw(ui, Number(scrub.value));
    report(false);
  });
  swapBox.addEventListener("change", () => { st.swap = swapBox.checked; draw(ui, st.step); });

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
    if (st.run != null && ui.cells != null) draw(ui, st.step);
  });
  resized.observe(planesBox);

  // what the server says: a new run, or a step and play state set elsewhere (a link, a presenter)
  function follow() {
    const step = model.step, playing = model.playing;
    if (st.sent != null && st.sent.step === step && st.sent.playing === playing) return;  // our own report
    st.sent = null;
    if (playing) start(step, false);
    else { stop(false); draw(ui, step); st.pos = st.step; }
  }
  function newRun() {
    st.run = unpack(model);
    st.runs += 1;  // the tests wait on it: a run has arrived
    stop(false);
    if (st.run == null) return;
    build(ui);
    label(ui);
    st.sent = null;
    follow();
    if (!model.playing && st.step !== model.step) draw(ui, model.step);
  }
  model.on("run", newRun);
  model.on(["step", "playing", "plays"], follow);
  model.on("words", () => { label(ui); showMessage(ui); if (st.run) { build(ui); draw(ui, st.step); } });
  model.on("paintable", () => { if (st.run) { build(ui); draw(ui, st.step); } });
  model.on("settings", () => syncSettings(ui));
  model.on(["summary", "two_heads"], () => showSummary(ui));
  model.on("message", () => showMessage(ui));
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
  label(ui);
  showSummary(ui);
  showMessage(ui);
  newRun();
  // the tab is laid out after this view is made: draw the step at its size once it is there
  requestAnimationFrame(() => draw(ui, st.step));
}
