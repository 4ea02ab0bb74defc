// link/drag.js's readout text (readoutText, from what inputsOf reads of the drag's inputs row) and the numbers of
// link/shared.js in each language, against what the server writes for the same states and numbers
// (widgets/steps.py's Readout.text, session/i18n.py's Translator, core/report.py's sqrt_text), stored in the
// golden cases by tests/golden_reference.py.
import { test } from "node:test";
import assert from "node:assert/strict";
import { load, GOLDEN } from "./load.mjs";

const page = load(["link/attention.js", "link/shared.js", "link/outbox.js", "link/drag.js"],
                  ["inputsOf", "readoutText", "attentionStep", "fmtEntry", "sqrtText", "fmtL", "fmtVec"]);
const number = (x) => (x === "-inf" ? -Infinity : x);

test("the preview's readout is the server's text, in every language and at every step", () => {
  assert.ok(GOLDEN.readout.length >= 30);
  const langs = new Set();
  for (const c of GOLDEN.readout) {
    const inp = page.inputsOf({ inputs: { data: c.inputs } });
    const r = page.attentionStep(c.q, inp.keys, inp.values, inp.allowed, inp.scale);
    assert.equal(page.readoutText(inp, c.q, r), c.text, `${c.lang}, q = ${c.q}`);
    langs.add(c.lang);
  }
  assert.ok(langs.size >= 6, [...langs].join());
});

test("numbers, vectors and entries as each language writes them", () => {
  for (const c of GOLDEN.numbers) {
    const w = { ...c.format, masked: c.masked };
    for (const [x, d, text] of c.num) assert.equal(page.fmtL(x, d, w), text, `${c.lang}: ${x} at ${d}`);
    for (const [v, d, text] of c.vec) assert.equal(page.fmtVec(v, d, w), text, `${c.lang}: ${v} at ${d}`);
    for (const [x, text] of c.entry) assert.equal(page.fmtEntry(number(x), w), text, `${c.lang}: entry ${x}`);
  }
});

test("the divisor as the course writes it", () => {
  for (const [d, text] of GOLDEN.sqrt) assert.equal(page.sqrtText(d), text, `d_k = ${d}`);
});
