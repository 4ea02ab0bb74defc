// The Train tab's mirror of the core's forward pass (link/train_mirror.js: stepWeights, forward) and its numbers,
// run as the page runs it (link/train.py's TRAIN_SCRIPTS, concatenated in their order), against short runs of
// core.training and what the core computed at some of their steps, stored in the golden cases.
import { test } from "node:test";
import assert from "node:assert/strict";
import { load, GOLDEN, close } from "./load.mjs";

const T = GOLDEN.train;
const page = load(T.scripts, ["stepWeights", "forward", "short", "fmtL", "fmtShortL"]);

const closeAll = (got, want, what, tol = 1e-12) => {
  if (Array.isArray(want)) {
    assert.equal(got.length, want.length, what);
    want.forEach((w, i) => closeAll(got[i], w, `${what}[${i}]`, tol));
  } else assert.ok(close(got, want, tol), `${what}: ${got} against ${want}`);
};

test("the page's forward pass gives the core's weights, outputs, loss and projections at every step", () => {
  assert.ok(T.runs.length >= 4);
  for (const { preset, run, steps } of T.runs) {
    for (const s of steps) {
      const f = page.forward(run, page.stepWeights(run, s.step));
      const what = `${preset}, ${run.H} head(s), step ${s.step}`;
      closeAll(f.loss, s.loss, `${what}: loss`);
      closeAll(f.loss, run.loss[s.step], `${what}: the run's loss`);
      closeAll(page.forward(run, page.stepWeights(run, s.step, true)).loss, s.swapped, `${what}: swapped`);
      closeAll(f.weights, s.weights, `${what}: weights`);
      closeAll(f.heads.map((h) => h.weights), s.heads, `${what}: each head's weights`);
      closeAll(f.outputs, s.outputs, `${what}: outputs`);
      closeAll(f.heads.map((h) => h.Q), s.Q, `${what}: Q`);
      closeAll(f.heads.map((h) => h.K), s.K, `${what}: K`);
    }
  }
});

test("the tab writes numbers as the rest of the page and the server", () => {
  for (const c of GOLDEN.numbers) {
    const w = c.format;
    for (const [x, d, text] of c.short) assert.equal(page.fmtShortL(x, d, w), text, `${c.lang}: ${x} at ${d}`);
    for (const [x, , text] of c.short.filter(([, d]) => d === 6)) assert.equal(page.short(x, w), text, `${c.lang}: ${x}`);
  }
});

test("a weight's cell ink: the server sends the threshold, the page writes none of its own", () => {
  assert.equal(typeof T.ink_threshold, "number");
  const source = T.scripts.map((f) => load.source(f)).join("\n");
  assert.ok(!/\b0\.55\b/.test(source), "a threshold written in the page's scripts");
  assert.ok(/ink-dark", [pv] >= model\.ink_threshold/.test(source));
});
