// link/drag.js's pure functions (the geometry the preview draws a weight with) against the golden cases, which
// pytest checks the server's views on.
import { test } from "node:test";
import assert from "node:assert/strict";
import { load, GOLDEN, close } from "./load.mjs";

const page = load(["link/attention.js", "link/shared.js", "link/outbox.js", "link/drag.js"],
                  ["lineWidth", "valueSize", "barY", "inkOn"]);

test("the preview draws a weight with the server's widths, sizes, bars and ink", () => {
  const g = GOLDEN.geometry;
  for (const c of g.cases) {
    assert.ok(close(page.lineWidth(c.weight, g.max_width), c.line_width), `line width at ${c.weight}`);
    assert.ok(close(page.valueSize(c.weight, g.value_size), c.value_size), `value size at ${c.weight}`);
    assert.ok(close(page.barY(c.weight, g.bar.top, g.bar.bottom), c.bar_y), `bar at ${c.weight}`);
    assert.equal(page.inkOn(c.weight, g.ink_threshold), c.ink, `ink at ${c.weight}`);
  }
});
