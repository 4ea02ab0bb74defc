"""Write ``tests/data/torch_sdpa.json``: PyTorch's own answers for the core's API tests.

``torch.nn.functional.scaled_dot_product_attention`` is the reference the core's
arguments copy, so its outputs on a fixed set of inputs are stored beside the
tests, which then run without PyTorch. Each case holds the inputs, the arguments
as given to torch, and torch's float64 output. To regenerate, with any Python that
has torch and numpy (PyTorch is not a dependency of the app)::

    python tests/torch_reference.py
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).with_name("data") / "torch_sdpa.json"
N_CASES = 40


def cases(np):
    """Inputs covering each kind of argument: no mask, a bool mask, a bool key mask (n_k,) broadcast over the
    queries, a float mask with -inf entries, is_causal (square and not), and scale None, 1.0 or another factor."""
    rng = np.random.default_rng(2017)
    for i in range(N_CASES):
        n_q, n_k, d_k, d_v = (int(x) for x in rng.integers(1, 6, size=4))
        case = dict(query=rng.normal(size=(n_q, d_k)) * 2, key=rng.normal(size=(n_k, d_k)) * 2,
                    value=rng.normal(size=(n_k, d_v)), attn_mask=None, is_causal=False,
                    scale=[None, 1.0, 0.3][i % 3])
        kind = i % 5
        if kind == 1:
            m = rng.random((n_q, n_k)) < 0.5
            m[np.arange(n_q), rng.integers(0, n_k, n_q)] = True
            case["attn_mask"] = m
        elif kind == 2:
            m = rng.random(n_k) < 0.5
            m[rng.integers(0, n_k)] = True
            case["attn_mask"] = m
        elif kind == 3:
            b = rng.normal(size=(n_q, n_k))
            b[rng.random((n_q, n_k)) < 0.3] = -np.inf
            b[np.arange(n_q), rng.integers(0, n_k, n_q)] = 0.25
            case["attn_mask"] = b
        elif kind == 4:
            case["is_causal"] = True
        yield case


def main() -> None:
    import numpy as np
    import torch
    import torch.nn.functional as F

    def jsonable(x):
        # -inf is not JSON: a float mask's masked entries are written as null
        if isinstance(x, np.ndarray):
            return [jsonable(v) for v in x] if x.ndim else jsonable(x.item())
        if isinstance(x, (float, np.floating)):
            return None if np.isneginf(x) else float(x)
        return x.item() if isinstance(x, np.generic) else x

    out = []
    for c in cases(np):
        mask = None if c["attn_mask"] is None else torch.from_numpy(np.asarray(c["attn_mask"]))
        got = F.scaled_dot_product_attention(torch.from_numpy(c["query"]), torch.from_numpy(c["key"]),
                                             torch.from_numpy(c["value"]), mask, 0.0, c["is_causal"],
                                             scale=c["scale"])
        out.append({k: jsonable(v) for k, v in c.items()} | {"output": jsonable(got.numpy())})
    OUT.parent.mkdir(exist_ok=True)
    lines = ",\n".join(json.dumps(c, separators=(",", ":")) for c in out)  # one case a line: diffs stay readable
    OUT.write_text(f'{{"torch": {json.dumps(torch.__version__)}, "cases": [\n{lines}\n]}}\n')
    print(f"{len(out)} cases from torch {torch.__version__} -> {OUT}")


if __name__ == "__main__":
    main()
