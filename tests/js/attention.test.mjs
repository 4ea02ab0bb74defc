// link/attention.js (the page's mirror of the formula and of core.report.fmt) and link/shared.js (the numbers
// in the page's language, the clamp, the grab) against the golden cases, which pytest checks the core on.
import { test } from "node:test";
import assert from "node:assert/strict";
import { load, GOLDEN, close } from "./load.mjs";

const page = load(["link/attention.js", "link/shared.js"],
                  ["attentionStep", "softmax", "fmt", "fmtL", "fmtVec", "clamp", "nearestWithin"]);

test("attentionStep gives the core's dot products, scores, weights and output", () => {
  for (const c of GOLDEN.attention) {
    const r = page.attentionStep(c.q, c.keys, c.values, c.allowed, c.scale);
    for (const key of ["dots", "scores", "weights", "output"]) {
      assert.equal(r[key].length, c[key].length, key);
      r[key].forEach((x, j) => assert.ok(close(x, c[key][j]), `${key}[${j}]: ${x} against ${c[key][j]}`));
    }
  }
});

test("softmax of the course's scores", () => {
  // Section 6, q_love: scores 0, 1/√2, 1/√2 give weights 0.1978, 0.4011, 0.4011
  const w = page.softmax([0, Math.SQRT1_2, Math.SQRT1_2]).weights;
  [0.1978, 0.4011, 0.4011].forEach((x, j) => assert.ok(Math.abs(w[j] - x) < 5e-5, `${w[j]}`));
  assert.deepEqual([...page.softmax([1, -Infinity]).weights], [1, 0]); // a masked score weighs nothing
});

test("fmt writes every number as core.report.fmt does", () => {
  const wrong = GOLDEN.fmt.filter(([x, d, text]) => page.fmt(x, d) !== text)
    .map(([x, d, text]) => `${x} at ${d}: ${page.fmt(x, d)}, not ${text}`);
  assert.deepEqual(wrong, []);
});

test("numbers and vectors in the page's language", () => {
  const fr = { decimal: ",", vector_sep: " ; ", isolate: false }, ar = { decimal: ".", vector_sep: ", ", isolate: true };
  assert.equal(page.fmtL(4.40667, 4, fr), "4,4067");
  assert.equal(page.fmtVec([0, 1], 3, fr), "(0,000 ; 1,000)");
  assert.equal(page.fmtVec([0.5, -0.25], 2, ar), "\u2066(0.50, -0.25)\u2069");
});

test("a press picks up what the server's grab picks up, clamped as the server clamps", () => {
  for (const c of GOLDEN.grab) {
    const [lo, hi] = c.plane;
    assert.equal(page.nearestWithin(c.keys, c.at, c.radius, c.query), c.picked, `at ${c.at}`);
    assert.deepEqual(c.at.map((x) => page.clamp(x, lo, hi)), c.clamped);
  }
  assert.ok(Number.isNaN(page.clamp(NaN, 0, 1))); // not a number stays one: the server refuses it
});
