// link/projections.js's preview (selfAttention, statusText, from what projectionInputs reads of the drag's inputs
// row) against the core's self-attention at a temperature, its saturation, and the outputs' line the server writes
// (core.projections, core.scaling, link/projections.py), stored in the golden cases.
import { test } from "node:test";
import assert from "node:assert/strict";
import { load, GOLDEN, close } from "./load.mjs";

const page = load(["link/attention.js", "link/shared.js", "link/outbox.js", "link/projections.js"],
                  ["projectionInputs", "selfAttention", "statusText"]);

const closeAll = (got, want, what) => {
  if (Array.isArray(want)) {
    assert.equal(got.length, want.length, what);
    want.forEach((w, i) => closeAll(got[i], w, `${what}[${i}]`));
  } else assert.ok(close(got, want, 1e-12), `${what}: ${got} against ${want}`);
};

test("the page's self-attention is the core's, at the state's temperature", () => {
  assert.ok(GOLDEN.projections.length >= 10);
  for (const c of GOLDEN.projections) {
    const inp = page.projectionInputs({ inputs: { data: c.inputs } });
    const r = page.selfAttention(inp.X, inp.W[0], inp.W[1], inp.W[2], inp.T);
    for (const key of ["Q", "K", "V", "dots", "scores", "weights", "output"]) closeAll(r[key], c[key], `${c.lang}: ${key}`);
    closeAll(r.maxWeight, c.max_weight, `${c.lang}: largest weight`);
    closeAll(r.entropy, c.entropy, `${c.lang}: entropy`);
  }
});

test("the outputs' line is the server's, at rest and during a drag, in every language", () => {
  for (const c of GOLDEN.projections) {
    const inp = page.projectionInputs({ inputs: { data: c.inputs } });
    const r = page.selfAttention(inp.X, inp.W[0], inp.W[1], inp.W[2], inp.T);
    assert.equal(page.statusText(inp.tokens, r, "", null, inp.words), c.status, c.lang);
    assert.equal(page.statusText(inp.tokens, r, c.handle, c.at, inp.words), c.dragged, c.lang);
  }
});
