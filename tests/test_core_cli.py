"""``python -m core``: the course's numbers, every step, JSON, errors, and the page's readout lines.

Expected numbers come from the course text (Section 6 and its causal and unscaled
variants, as in tests/test_core.py) or from plain-Python arithmetic written here.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core.attention import scaled_dot_product_attention
from core.report import readout_lines
from session.state import AttentionState
from widgets.steps import Readout

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([sys.executable, "-m", "core", *args], capture_output=True, text=True, encoding="utf-8",
                          cwd=ROOT, env=env, timeout=60)


def lines_of(stdout: str) -> dict[str, str]:
    """The text after each line's label, by label ("Weights a = softmax(s)" -> "I 0.1978, ...")."""
    out = {}
    for line in stdout.splitlines():
        label, _, rest = line.strip().partition(": ")
        out[label] = rest
    return out


def readout_part(stdout: str) -> list[str]:
    """The lines the app's readout also has: the CLI indents its extra steps."""
    return [line for line in stdout.splitlines() if not line.startswith(" ")]


def test_default_is_section_6_query_of_love():
    p = run()
    assert p.returncode == 0 and p.stderr == ""
    got = lines_of(p.stdout)
    assert p.stdout.splitlines()[0] == 'Query of "love": q = (0.000, 1.000)'
    assert got["Dot products q·k"] == "I 0.0000, love 1.0000, NLP 1.0000"
    assert got["Scores s = q·k / √2"] == "I 0.0000, love 0.7071, NLP 0.7071"
    # the course's softmax steps: subtract the max (0.7071), exp to (0.4931, 1, 1), sum 2.4931
    assert got["max of s"] == "0.7071"
    assert got["s − max"] == "I -0.7071, love 0.0000, NLP 0.0000"
    assert got["exp(s − max)"] == "I 0.4931, love 1.0000, NLP 1.0000"
    assert got["Σ exp"] == "2.4931; a = exp / Σ"
    assert got["Weights a = softmax(s)"] == "I 0.1978, love 0.4011, NLP 0.4011"
    assert got["aᵢvᵢ"] == "I 0.3956, love 2.4067, NLP 1.6044"
    assert p.stdout.splitlines()[-1] == "Output Σ aᵢvᵢ = 4.4067 ≈ 4.41"


def test_query_1_0_is_the_course_query_of_I():
    p = run("--query", "1,0")
    got = lines_of(p.stdout)
    assert got["Scores s = q·k / √2"] == "I 0.7071, love 0.0000, NLP 0.7071"
    assert got["exp(s − max)"] == "I 1.0000, love 0.4931, NLP 1.0000"
    assert got["Weights a = softmax(s)"] == "I 0.4011, love 0.1978, NLP 0.4011"
    assert p.stdout.splitlines()[-1] == "Output Σ aᵢvᵢ = 3.5933 ≈ 3.59"


def test_no_scale_on_love():
    p = run("--no-scale")
    got = lines_of(p.stdout)
    assert got["Scores s = q·k (unscaled)"] == "I 0.0000, love 1.0000, NLP 1.0000"
    assert got["exp(s − max)"] == f"I {math.exp(-1):.4f}, love 1.0000, NLP 1.0000"
    assert got["Weights a = softmax(s)"] == "I 0.1554, love 0.4223, NLP 0.4223"
    assert p.stdout.splitlines()[-1] == "Output Σ aᵢvᵢ = 4.5339 ≈ 4.53"


def test_causal_love_cannot_see_NLP():
    p = run("--causal", "--row", "love")
    got = lines_of(p.stdout)
    assert got["Scores s = q·k / √2"] == "I 0.0000, love 0.7071, NLP masked"
    assert got["s − max"] == "I -0.7071, love 0.0000, NLP masked"
    assert got["exp(s − max)"] == "I 0.4931, love 1.0000, NLP masked"
    assert got["Σ exp"] == f"{1 + math.exp(-1 / math.sqrt(2)):.4f}; a = exp / Σ"
    assert got["Weights a = softmax(s)"] == "I 0.3302, love 0.6698, NLP 0.0000"
    assert got["aᵢvᵢ"].endswith("NLP masked")
    assert p.stdout.splitlines()[-1] == "Output Σ aᵢvᵢ = 4.6790 ≈ 4.68"


def test_module_2_vector_values_row_I():
    p = run("--values", "10,0;0,10;5,5", "--row", "I")
    assert p.stdout.splitlines()[0] == 'Query of "I": q = (1.000, 0.000)'
    assert lines_of(p.stdout)["Weights a = softmax(s)"] == "I 0.4011, love 0.1978, NLP 0.4011"
    assert p.stdout.splitlines()[-1] == "Output Σ aᵢvᵢ = (6.0167, 3.9833) ≈ (6.02, 3.98)"


def test_temperature_and_named_tokens_and_keys():
    p = run("--keys", "1,0;0,1", "--values", "1;3", "--tokens", "a;b", "--row", "1", "--temperature", "0.5")
    # q = k_a = (1, 0): dots (1, 0), scores (2, 0); a_a = e^2 / (e^2 + 1)
    a = math.exp(2) / (math.exp(2) + 1)
    got = lines_of(p.stdout)
    assert got["Scores s = q·k / T (T = 0.5)"] == "a 2.0000, b 0.0000"
    assert got["Weights a = softmax(s)"] == f"a {a:.4f}, b {1 - a:.4f}"
    assert p.stdout.splitlines()[-1] == f"Output Σ aᵢvᵢ = {a + 3 * (1 - a):.4f} ≈ {a + 3 * (1 - a):.2f}"


def test_json_has_every_intermediate_in_full_precision():
    p = run("--json", "--causal")
    assert p.returncode == 0
    d = json.loads(p.stdout)
    r2 = 1 / math.sqrt(2)
    z = 1 + math.exp(-r2)
    assert d["tokens"] == ["I", "love", "NLP"] and d["row"] == 1 and d["token"] == "love"
    assert d["query"] == [0.0, 1.0] and d["keys"] == [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    assert d["values"] == [2.0, 6.0, 4.0] and d["d_k"] == 2
    assert d["scaling"] == "sqrt_d_k" and d["temperature"] is None and d["scale"] == 1 / math.sqrt(2)
    assert d["allowed"] == [True, True, False]
    assert d["dot_products"] == [0.0, 1.0, 1.0]
    assert d["scores"][0] == 0.0 and d["scores"][1] == pytest.approx(r2, rel=1e-15) and d["scores"][2] is None
    assert d["max_score"] == pytest.approx(r2, rel=1e-15)
    assert d["shifted_scores"][2] is None and d["exp"][2] is None and d["weighted_values"][2] is None
    assert d["exp"][0] == pytest.approx(math.exp(-r2), rel=1e-15) and d["exp"][1] == 1.0
    assert d["exp_sum"] == pytest.approx(z, rel=1e-15)
    assert d["weights"] == pytest.approx([math.exp(-r2) / z, 1 / z, 0.0], rel=1e-15)
    assert d["output"] == pytest.approx((2 * math.exp(-r2) + 6) / z, rel=1e-15)
    # full precision: the numbers are the core's float64 bits, not rounded text
    r = scaled_dot_product_attention([[1, 0], [0, 1], [1, 1]], [[1, 0], [0, 1], [1, 1]], [2, 6, 4],
                                     attn_mask=np.tril(np.ones((3, 3), bool)))
    assert d["weights"] == r.weights[1].tolist() and d["output"] == float(r.output[1])


def test_json_with_vector_values_and_temperature():
    d = json.loads(run("--json", "--values", "10,0;0,10;5,5", "--temperature", "2").stdout)
    assert d["scaling"] == "temperature" and d["temperature"] == 2.0 and d["scale"] == 0.5
    assert len(d["output"]) == 2 and len(d["weighted_values"]) == 3 and len(d["weighted_values"][0]) == 2
    assert d["scores"] == [0.0, 0.5, 0.5]


@pytest.mark.parametrize("args, option", [
    (["--query", "1,x"], "--query"),
    (["--query", "1,0,0"], "--query"),
    (["--query", "-1,0"], "--query"),
    (["--query", "nan,0"], "--query"),
    (["--keys", "1,0;0"], "--keys"),
    (["--values", "1;2"], "--values"),
    (["--values", "1,2;3;4"], "--values"),
    (["--tokens", "a;a;b"], "--tokens"),
    (["--tokens", "a;b"], "--tokens"),
    (["--row", "cat"], "--row"),
    (["--row", "0"], "--row"),
    (["--temperature", "0"], "--temperature"),
    (["--temperature", "-1"], "--temperature"),
    (["--temperature", "inf"], "--temperature"),
    (["--temperature", "abc"], "--temperature"),
    (["--temperature", "1", "--no-scale"], "--no-scale"),
    (["--query", "1e200,1e200", "--keys", "1e200,1e200;0,1;1,1"], "--query, --keys"),
])
def test_bad_input_exits_2_with_one_line_naming_the_option(args, option):
    p = run(*args)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.endswith("\n") and p.stderr.count("\n") == 1, p.stderr
    assert p.stderr.startswith(f"python -m core: error: {option}"), p.stderr


@pytest.mark.parametrize("cli, state", [
    ([], {}),
    (["--query", "1,0"], {"query": (1.0, 0.0)}),
    (["--row", "I"], {"selected": 0, "query": (1.0, 0.0)}),
    (["--row", "NLP"], {"selected": 2, "query": (1.0, 1.0)}),
    (["--no-scale"], {"scale": False}),
    (["--causal", "--row", "love"], {"causal": True}),
    (["--query=0.3,-1.25"], {"query": (0.3, -1.25)}),
    (["--values", "10,0;0,10;5,5", "--row", "I"], {"preset": "Module 2: vector values", "selected": 0,
                                                   "query": (1.0, 0.0)}),
], ids=["default", "query-1-0", "row-I", "row-NLP", "no-scale", "causal", "query-typed", "module-2"])
def test_cli_lines_are_the_pages_readout(cli, state):
    p = run(*cli)
    s = AttentionState()
    s.param.update(**{k: v for k, v in state.items() if k == "preset"})
    s.param.update(**{k: v for k, v in state.items() if k != "preset"})
    assert readout_part(p.stdout) == Readout.text(s).splitlines()


@pytest.mark.parametrize("seed", range(30))
def test_readout_lines_equal_the_pages_readout_on_random_states(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    s = AttentionState()
    vector = seed % 3 == 0
    # positive values: outputs are never in (-0.005, 0), where the page prints "-0.00" and the core "0.00"
    values = rng.uniform(0.5, 10, size=(n, 2) if vector else n).round(3)
    s.param.update(tokens=[f"w{i}" for i in range(n)], keys=rng.normal(size=(n, 2)).round(2) * 3, values=values,
                   selected=int(rng.integers(0, n)), query=tuple(rng.normal(size=2).round(3) * 2),
                   scale=bool(rng.integers(0, 2)), causal=bool(rng.integers(0, 2)))
    lines = readout_lines(s.tokens, s.query, s.result, s.selected, scale=s.scale)
    assert lines == Readout.text(s).splitlines()


def test_the_command_imports_no_ui_library():
    code = "\n".join([
        "import runpy, sys",
        "sys.argv = ['core', '--json']",
        "try:",
        "    runpy.run_module('core', run_name='__main__')",
        "except SystemExit:",
        "    pass",
        "print([m for m in ('panel', 'bokeh', 'param', 'widgets') if m in sys.modules], file=sys.stderr)",
    ])
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert p.stderr.strip() == "[]" and json.loads(p.stdout)["token"] == "love"
