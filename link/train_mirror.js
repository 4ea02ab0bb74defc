// The Train tab's mirror of the core's forward pass (core/training/model.py): one step's projections from a
// run's flat arrays, and the queries, keys, weights, outputs and loss the core computes from them. Checked
// against the core under node (tests/js/train.test.mjs) and in the page (tests/ui/test_train.py).

// One step's projections, from the run's flat arrays: {WQ, WK, WV} per head as rows of columns, WO or null.
export function stepWeights(run, t, swap = false) {
  const H = run.H, dv = run.d_v, heads = [];
  const wv = run.wv_trained ? t : 0;
  const mat = (flat, at, rows, cols) => {
    const m = [];
    for (let r = 0; r < rows; r++) {
      const row = [];
      for (let c = 0; c < cols; c++) row.push(flat[at + r * cols + c]);
      m.push(row);
    }
    return m;
  };
  for (let h = 0; h < H; h++) {
    const WQ = mat(run.WQ, (t * H + h) * 4, 2, 2), WK = mat(run.WK, (t * H + h) * 4, 2, 2);
    heads.push({WQ: swap ? WK : WQ, WK: swap ? WQ : WK, WV: mat(run.WV, (wv * H + h) * 2 * dv, 2, dv)});
  }
  const WO = run.has_WO ? mat(run.WO, t * H * dv * run.d_out, H * dv, run.d_out) : null;
  return {heads, WO};
}

const matmul = (A, B) => A.map((a) => B[0].map((_, c) => a.reduce((acc, x, k) => acc + x * B[k][c], 0)));

// core.training.model's forward pass and loss for one step (its _forward, _outputs and _loss, no mask):
//   run: X (flat n x 2), n, H, d_v, d_out, factor (s / T), kind ("weights" or "outputs"), target (flat);
//   w: stepWeights(run, t).
// Returns {heads: [{Q, K, V, weights}], weights (the heads' average, n x n), outputs (n x d), loss}; Q = X W_Q,
// K = X W_K and V = X W_V as the planes show them, the scores c Q K^T as the core computes them:
// (sqrt(c) X W_Q)(sqrt(c) X W_K)^T, c = s / T taken into the embeddings once.
export function forward(run, w) {
  const n = run.n, H = run.H;
  const X = [];
  for (let i = 0; i < n; i++) X.push([run.X[2 * i], run.X[2 * i + 1]]);
  const root = Math.sqrt(run.factor), Xs = X.map((x) => x.map((v) => root * v));
  const heads = [], logA = [];
  for (const {WQ, WK, WV} of w.heads) {
    const Qs = matmul(Xs, WQ), Ks = matmul(Xs, WK);
    const S = Qs.map((q) => Ks.map((k) => q[0] * k[0] + q[1] * k[1]));
    const weights = [], logs = [];
    for (const row of S) {
      const top = Math.max(...row), E = row.map((s) => Math.exp(s - top));
      const Z = E.reduce((a, b) => a + b, 0);
      weights.push(E.map((e) => e / Z));
      logs.push(row.map((s) => s - top - Math.log(Z)));
    }
    logA.push(logs);
    heads.push({Q: matmul(X, WQ), K: matmul(X, WK), V: matmul(X, WV), weights});
  }
  const avg = [];
  for (let i = 0; i < n; i++) {
    avg.push([]);
    for (let j = 0; j < n; j++) avg[i].push(heads.reduce((a, hd) => a + hd.weights[i][j], 0) / H);
  }
  const O = heads.map((hd) => matmul(hd.weights, hd.V));  // each head's outputs, n x d_v
  let outputs, loss = 0;
  if (run.kind === "weights") {
    outputs = O[0].map((row, i) => row.map((_, c) => O.reduce((a, o) => a + o[i][c], 0) / H));
    // -(1/n) sum P_ij log Abar_ij, log Abar as a log-sum-exp over the heads (core: _log_mean_weights)
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) {
      const p = run.target[i * n + j];
      if (p === 0) continue;
      const best = Math.max(...logA.map((l) => l[i][j]));
      const total = logA.reduce((a, l) => a + Math.exp(l[i][j] - best), 0);
      loss -= (p / n) * (best + Math.log(total / H));
    }
  } else {
    outputs = w.WO == null ? O[0] : matmul(O[0].map((_, i) => O.flatMap((o) => o[i])), w.WO);
    let sum = 0;
    outputs.forEach((y, i) => y.forEach((v, c) => { const r = v - run.target[i * run.d_out + c]; sum += r * r; }));
    loss = sum / n;
  }
  return {heads, weights: avg, outputs, loss};
}
