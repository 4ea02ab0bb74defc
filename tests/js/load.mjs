// Loads the page's scripts as the page does: concatenated, not as modules, in one global scope (node:vm), and
// returns the names asked for. The golden cases are tests/data/golden_attention.json (tests/golden_reference.py).
import fs from "node:fs";
import path from "node:path";
import vm from "node:vm";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

export function load(files, names, { prelude = "", globals = {} } = {}) {
  // a module's exports (link/train.js is one, for a JSComponent) become plain declarations of the one scope;
  // `prelude`: what the server writes before the scripts (its constants), `globals`: the page's (window)
  const code = prelude + files.map((f) => fs.readFileSync(path.join(ROOT, f), "utf8").replace(/^export /gm, ""))
    .join("\n");
  const context = vm.createContext({ ...globals });
  vm.runInContext(code, context, { filename: files.join("+") });
  return vm.runInContext(`({${names.join(", ")}})`, context);
}

// A script's text, as the page gets it.
load.source = (file) => fs.readFileSync(path.join(ROOT, file), "utf8");

const raw = JSON.parse(fs.readFileSync(path.join(ROOT, "tests", "data", "golden_attention.json"), "utf8"));
const number = (x) => (x === "inf" ? Infinity : x === "-inf" ? -Infinity : x);
export const GOLDEN = { ...raw, fmt: raw.fmt.map(([x, d, text]) => [number(x), d, text]) };

// Whether a and b agree to a relative and absolute tolerance (null in b: a masked score, -Infinity in a).
export function close(a, b, tol = 1e-12) {
  if (b === null) return a === -Infinity;
  return Math.abs(a - b) <= tol * Math.max(1, Math.abs(b));
}
