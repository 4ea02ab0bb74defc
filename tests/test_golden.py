"""The server's side of the golden cases (tests/data/golden_attention.json): the core, core.report.fmt, the drag's
grab and clamp, the views' geometry and the labels' sides agree with the file, which the page's scripts are
checked on too (tests/js/); and every case in the file is what the server's code writes now. Regenerate the file
with ``.venv/bin/python -m tests.golden_reference``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from core import scaled_dot_product_attention
from core.report import fmt
from link.drag import DragChannel
from session.state import AttentionState
from widgets.query_plot import QueryPlot, label_sides
from widgets.steps import Readout
from widgets.weights import WeightBars

GOLDEN = json.loads((Path(__file__).with_name("data") / "golden_attention.json").read_text())


def _number(x):
    return {"inf": math.inf, "-inf": -math.inf}.get(x, x) if isinstance(x, str) else x


def test_the_file_holds_the_course_numbers():
    # Section 6: q_love = k_love = (0, 1), scalar values (2, 6, 4): weights 0.1978, 0.4011, 0.4011 and output 4.4067
    love = GOLDEN["attention"][0]
    assert love["q"] == [0.0, 1.0] and love["weights"] == pytest.approx([0.1978, 0.4011, 0.4011], abs=5e-5)
    assert love["output"] == pytest.approx([4.4067], abs=5e-5)


@pytest.mark.parametrize("case", GOLDEN["attention"], ids=lambda c: f"n{len(c['keys'])}-dk{len(c['q'])}")
def test_the_core_agrees_with_the_golden_cases(case):
    q, K, V = np.array(case["q"]), np.array(case["keys"]), np.array(case["values"])
    r = scaled_dot_product_attention(q[None], K, V, np.array(case["allowed"])[None],
                                     scale=None if case["scale"] else 1.0)
    assert r.dots[0].tolist() == pytest.approx(case["dots"], rel=1e-12, abs=1e-12)
    scores = r.scores[0].tolist()
    assert [s == -math.inf for s in scores] == [s is None for s in case["scores"]]  # the masked ones
    assert [s for s in scores if s != -math.inf] == pytest.approx([s for s in case["scores"] if s is not None],
                                                                   rel=1e-12, abs=1e-12)
    assert r.weights[0].tolist() == pytest.approx(case["weights"], rel=1e-12, abs=1e-15)
    assert r.output[0].tolist() == pytest.approx(case["output"], rel=1e-12, abs=1e-12)


def test_fmt_agrees_with_the_golden_cases():
    wrong = [(x, d, text, fmt(_number(x), d)) for x, d, text in GOLDEN["fmt"] if fmt(_number(x), d) != text]
    assert not wrong
    # ties go to even, as Python writes them: the page's mirror must not round them away from zero
    assert [0.125, 2, "0.12"] in GOLDEN["fmt"] and [2.5, 0, "2"] in GOLDEN["fmt"]
    assert [-0.00001, 4, "0.0000"] in GOLDEN["fmt"]


@pytest.mark.parametrize("case", GOLDEN["grab"], ids=lambda c: f"at{c['at']}")
def test_the_drag_grabs_and_clamps_as_the_golden_cases(case):
    state = AttentionState()
    state.keys = np.array(case["keys"])
    state.move_query(*case["query"])
    channel = DragChannel(QueryPlot(state=state), Readout(state=state), WeightBars(state=state), state=state)
    assert channel._grab(*case["at"]) == case["picked"]
    lo, hi = case["plane"]
    channel.receive(*case["at"], seq=1, start=True, end=True)  # a tap moves q, clamped to the plane
    assert list(state.query) == case["clamped"] and [lo, hi] == [-1.5, 2.5]


def test_the_views_geometry_agrees_with_the_golden_cases():
    g = GOLDEN["geometry"]
    state = AttentionState()
    plot, bars = QueryPlot(state=state), WeightBars(state=state)
    w = state.result.weights[state.selected]
    assert plot.lines_source.data["width"] == pytest.approx([1 + (g["max_width"] - 1) * x for x in w])
    assert f'data-gap="{g["bar"]["gap"]}"' in bars.div.text
    for c in g["cases"]:
        assert c["line_width"] == pytest.approx(1 + 13 * c["weight"])  # from 1 px at weight 0 to 14 px at 1
        assert c["value_size"] == pytest.approx(8 + 16 * c["weight"])
        assert c["ink"] == ("white" if c["weight"] < 0.55 else "black")


@pytest.mark.parametrize("case", GOLDEN["labels"], ids=lambda c: str(c["keys"]))
def test_label_sides_agree_with_the_golden_cases(case):
    assert label_sides(np.array(case["keys"]), np.array(case["keys"])).tolist() == case["sides"]


def _same(written, stored, where="") -> list[str]:
    """Where ``written`` and ``stored`` (JSON values) differ: texts, keys and lengths exactly, numbers to 1e-9 (the
    last bits of a float may differ from one machine's arithmetic to another's)."""
    if isinstance(stored, dict) and isinstance(written, dict):
        if written.keys() != stored.keys():
            return [f"{where}: keys {sorted(written)} against {sorted(stored)}"]
        return [d for k in stored for d in _same(written[k], stored[k], f"{where}.{k}")]
    if isinstance(stored, list) and isinstance(written, list):
        if len(written) != len(stored):
            return [f"{where}: {len(written)} entries against {len(stored)}"]
        return [d for i, (w, s) in enumerate(zip(written, stored, strict=True)) for d in _same(w, s, f"{where}[{i}]")]
    if isinstance(stored, float) and isinstance(written, (int, float)) and not isinstance(written, bool):
        return [] if written == pytest.approx(stored, rel=1e-9, abs=1e-12) else [f"{where}: {written} against {stored}"]
    return [] if written == stored and type(written) is type(stored) else [f"{where}: {written!r} against {stored!r}"]


def test_the_file_holds_what_the_servers_code_writes_now():
    """A rule changed on the server's side (a text, a number format, the grab, a constant the page is sent) fails
    here until the file is written again, and then the page's mirror is checked against the new cases (tests/js/)."""
    from tests.golden_reference import golden

    stale = _same(json.loads(json.dumps(golden(), allow_nan=False)), GOLDEN)
    assert not stale, "tests/data/golden_attention.json is stale (python -m tests.golden_reference): " + "; ".join(
        stale[:10])
