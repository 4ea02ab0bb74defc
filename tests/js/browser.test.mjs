// link/browser.js's rules (the preview of an arrow key's nudge, q as the address writes it), run after the constants
// the server writes before it (link/browser.py), against link.browser.handle_key and Python's repr, stored in the
// golden cases.
import { test } from "node:test";
import assert from "node:assert/strict";
import { load, GOLDEN } from "./load.mjs";

const B = GOLDEN.browser;
const prelude = Object.entries(B.constants).map(([k, v]) => `const ${k} = ${JSON.stringify(v)}\n`).join("");
const window = {};
const page = load(["link/attention.js", "link/shared.js", "link/browser.js"], ["previewNudge", "reprFloat", "clamp"],
                  { prelude, globals: { window } });

test("an arrow key's preview moves q where the server's handle_key does", () => {
  const [lo, hi] = B.plane;
  for (const c of B.nudges) {
    let tapped = null;
    const models = { "drag-inputs": { data: { guided: [false] } }, "drag-confirmed": { data: { x: [c.q[0]], y: [c.q[1]] } } };
    const doc = { get_model_by_name: (name) => models[name] };
    window.attentionExplorerPointers = new Map([[doc, (ev) => { tapped = ev; }]]);
    page.previewNudge(doc, c.key, c.shift, false);
    assert.ok(tapped != null && tapped.preview_only, `${c.key} from ${c.q}`);
    // link/drag.js's pointer handler clamps what it is given to the plane, as the server does
    assert.deepEqual([page.clamp(tapped.x, lo, hi), page.clamp(tapped.y, lo, hi)], c.moved,
                     `${c.key}${c.shift ? " with Shift" : ""} from ${c.q}`);
  }
});

test("q in the address is written as Python's repr writes it", () => {
  for (const [x, text] of B.repr) assert.equal(page.reprFloat(x), text, String(x));
});
