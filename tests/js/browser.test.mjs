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

// The page's changes to BokehJS check, as the page loads, that the names they replace are there: a name a later
// BokehJS no longer has is said in the console, once, naming it, and the change is left out.
function withBokeh(modules) {
  const warned = [];
  const window = { Bokeh: { require: (name) => { if (!(name in modules)) throw new Error(`no ${name}`); return modules[name]; } } };
  const console = { warn: (text) => warned.push(String(text)), log() {}, error() {} };
  const page = load(["link/attention.js", "link/shared.js", "link/browser.js"], ["paintFromModels", "layOutShownTabOnly"],
                    { prelude, globals: { window, console } });
  return { page, warned };
}

test("a BokehJS without the names the page patches is said in the console, once, naming each", () => {
  const { page, warned } = withBokeh({
    "core/visuals/visual": { VisualProperties: { prototype: {} } },  // no _get_css_value
    "models/layouts/layout_dom": { LayoutDOMView: { prototype: {} } },  // no layoutable_views
  });
  page.paintFromModels({});
  page.paintFromModels({});  // a second document: said once
  page.layOutShownTabOnly({});
  assert.equal(warned.length, 2, warned.join("\n"));
  assert.match(warned[0], /BokehJS has no VisualProperties\.prototype\._get_css_value/);
  assert.match(warned[1], /BokehJS has no LayoutDOMView\.prototype\.layoutable_views/);
});

test("a BokehJS whose modules moved is said in the console too", () => {
  const { page, warned } = withBokeh({});
  page.paintFromModels({});
  page.layOutShownTabOnly({});
  assert.deepEqual(warned.map((w) => w.match(/no (\S+)/)[1]),
                   ["VisualProperties.prototype._get_css_value", "LayoutDOMView.prototype.layoutable_views"]);
});

test("the names the page patches, where BokehJS has them, are patched without a word", () => {
  const lookup = function (name) { return `css ${name}`; };
  const visual = { prototype: { _get_css_value: lookup } };
  class LayoutDOMView { get layoutable_views() { return []; } }
  const { page, warned } = withBokeh({
    "core/visuals/visual": { VisualProperties: visual },
    "models/layouts/layout_dom": { LayoutDOMView },
  });
  page.paintFromModels({});
  const tabs = { model: { tabs: [] } };
  page.layOutShownTabOnly(tabs);
  assert.deepEqual(warned, []);
  assert.equal(visual.prototype._get_css_value.original, lookup);
  assert.ok(Object.prototype.hasOwnProperty.call(tabs, "layoutable_views"));
});
