// The softmax of one row of scores, as core.attention.softmax: shifted by the row's largest score, so that
// exp(s - max) <= 1 never overflows and the max contributes exp(0) = 1 to the sum; a score of -Infinity is a
// masked entry (weight 0).
//   scores : number[n]
// returns {rowMax, shifted, exp, expSum, weights}
function softmax(scores) {
  let rowMax = -Infinity;
  for (const s of scores) if (s > rowMax) rowMax = s;
  const shifted = scores.map((s) => (s === -Infinity ? -Infinity : s - rowMax));
  const exp = shifted.map(Math.exp);
  const expSum = exp.reduce((a, b) => a + b, 0);
  return { rowMax, shifted, exp, expSum, weights: exp.map((e) => e / expSum) };
}

// Σ_j weights[j] values[j] for one row of weights: each entry kept within [min v, max v], where a convex
// combination lies (rounding could step just out), as core.attention does.
//   weights : number[n_k]; values : number[n_k][d_v]  ->  number[d_v]
function weightedSum(weights, values) {
  const output = [];
  for (let c = 0; c < values[0].length; c++) {
    let lo = Infinity, hi = -Infinity, acc = 0;
    values.forEach((v, j) => { acc += weights[j] * v[c]; lo = Math.min(lo, v[c]); hi = Math.max(hi, v[c]); });
    output.push(Math.min(Math.max(acc, lo), hi));
  }
  return output;
}

// In-browser mirror of core/attention.py's scaled_dot_product_attention, for ONE query.
//
// The page uses it only as a preview while the pointer moves: the server recomputes
// every update with the NumPy core and its numbers replace these when they arrive.
// Keep the steps identical to core/: scores, masked max-shifted softmax, weighted sum.
//
//   q      : number[d_k]             the query
//   keys   : number[n_k][d_k]        K
//   values : number[n_k][d_v]        V, one row per key (scalar values as [v])
//   allowed: boolean[n_k]            mask row: true where q may attend to key j
//   scale  : boolean                 divide by sqrt(d_k)
// returns {dots, scores, rowMax, shifted, exp, expSum, weights, output}
function attentionStep(q, keys, values, allowed, scale) {
  const d_k = q.length;
  const factor = scale ? 1 / Math.sqrt(d_k) : 1;
  const dots = keys.map((k) => k.reduce((acc, kj, j) => acc + q[j] * kj, 0));
  const scores = dots.map((d, j) => (allowed[j] ? d * factor : -Infinity));
  const { rowMax, shifted, exp, expSum, weights } = softmax(scores);
  const output = weightedSum(weights, values);
  return { dots, scores, rowMax, shifted, exp, expSum, weights, output };
}

// Same text as core/report.py's fmt (Python's f"{x:.{d}f}"), so that the server's
// confirmation of a previewed number never flickers. toFixed breaks exact ties away
// from zero, Python to even; an exact tie at d decimals is an odd multiple of 2^-(d+1).
function fmt(x, d = 4) {
  if (!Number.isFinite(x)) return x > 0 ? "inf" : x < 0 ? "-inf" : "nan";
  let s = x.toFixed(d);
  const t = Math.abs(x) * 2 ** (d + 1);
  if (Number.isInteger(t) && t % 2 === 1) {
    const down = (Math.trunc(Math.abs(x) * 10 ** d)) / 10 ** d; // exact: |x| is a short dyadic
    const lastDigit = Math.round(down * 10 ** d) % 10;
    if (lastDigit % 2 === 0) s = (x < 0 ? "-" : "") + down.toFixed(d);
  }
  return /^-0\.?0*$/.test(s) ? s.slice(1) : s;
}

if (typeof module !== "undefined") module.exports = { attentionStep, fmt, softmax, weightedSum };
