// widgets/labels.js's pure functions: a label's first candidate place is on the side the server chose
// (widgets/query_plot.py, label_sides, in the golden cases), and the box and leader line of a hand-worked case.
import { test } from "node:test";
import assert from "node:assert/strict";
import { load, GOLDEN } from "./load.mjs";

const page = load(["widgets/labels.js"], ["labelCandidates", "labelBox", "leaderOf", "segmentCrosses"]);

test("a label's first place is on the server's side", () => {
  for (const c of GOLDEN.labels) {
    c.sides.forEach(([sx, sy], i) => {
      const first = page.labelCandidates(8, sx, -sy)[0]; // screen y runs down
      assert.equal(first.align, c.align[i], `key ${i} of ${JSON.stringify(c.keys)}`);
      assert.equal(first.baseline, c.baseline[i], `key ${i} of ${JSON.stringify(c.keys)}`);
      assert.equal(first.ring, 0);
    });
  }
});

test("a label's box and its leader line", () => {
  // anchored left and top, 10 px right and 4 px below a point at (100, 50): a 30 × 12 box from (110, 54)
  const box = page.labelBox(100, 50, 30, 12, { dx: 10, dy: 4, align: "left", baseline: "top" });
  assert.deepEqual({ ...box }, { left: 110, top: 54, right: 140, bottom: 66 }); // a copy: vm objects are of another realm
  // anchored right and middle, 10 px left of the point: the box ends there and is centred on the point's height
  assert.deepEqual({ ...page.labelBox(100, 50, 30, 12, { dx: -10, dy: 0, align: "right", baseline: "middle" }) },
                   { left: 60, top: 44, right: 90, bottom: 56 });
  // from the edge of a marker of radius 5 toward the box's nearest point (110, 54): the direction (10, 4)
  const leader = page.leaderOf(100, 50, 5, box), len = Math.hypot(10, 4);
  assert.ok(Math.abs(leader.x0 - (100 + 50 / len)) < 1e-12 && Math.abs(leader.y0 - (50 + 20 / len)) < 1e-12);
  assert.deepEqual([leader.x1, leader.y1], [110, 54]);
  assert.equal(page.segmentCrosses({ x0: 0, y0: 60, x1: 200, y1: 60 }, box), true);
  assert.equal(page.segmentCrosses({ x0: 0, y0: 0, x1: 200, y1: 0 }, box), false);
});
