// widgets/poll.js's browser id, run after the constants the server writes before it (widgets/poll.py): the id it
// keeps and the one it makes are ids the server takes (widgets.poll.BROWSER_ID), stored in the golden cases.
import { test } from "node:test";
import assert from "node:assert/strict";
import { webcrypto } from "node:crypto";
import { load, GOLDEN } from "./load.mjs";

const P = GOLDEN.poll;
const prelude = Object.entries(P.constants).map(([k, v]) => `const ${k} = ${JSON.stringify(v)}\n`).join("");
const stored = new Map();
const localStorage = { getItem: (k) => stored.get(k) ?? null, setItem: (k, v) => stored.set(k, String(v)) };
const page = load(["widgets/poll.js"], ["browserId"],
                  { prelude, globals: { localStorage, crypto: webcrypto, btoa, window: {} } });
const takes = new RegExp(`^(?:${P.constants.BROWSER_ID})$`);

test("the page keeps a stored id the server takes, and makes a new one for any other", () => {
  for (const [id, accepted] of P.ids) {
    stored.set(P.constants.BROWSER_KEY, id);
    const got = page.browserId();
    assert.equal(got === id, accepted, JSON.stringify(id));
    assert.ok(takes.test(got), got);  // what it makes, the server takes
  }
});
