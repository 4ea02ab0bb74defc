"""The learner's notebook lab/attention_lab.ipynb runs top to bottom offline and prints the course's numbers.

It is executed with nbclient on a kernel of this very Python (a kernel spec written
for the test, so no other installed "python3" kernel can stand in). Expected numbers
come from the course text: Section 6 (4.41 for "love", 3.59 for "I") and Module 2
(row I: 0.4011, 0.1978, 0.4011 and (6.0167, 3.9833)).
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import nbformat
import pytest

from testing import notebooks

LAB = Path(__file__).resolve().parents[1] / "lab" / "attention_lab.ipynb"
ANSWERS = {"answer_1": 4.0, "answer_2": 0.1554, "answer_3": 4.679}  # course: NLP's output, unscaled a_I, causal love


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory):
    """A kernels/ folder whose only "python3" kernel runs this interpreter (the venv's)."""
    root = tmp_path_factory.mktemp("jupyter")
    spec = root / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (test)", "language": "python",
    }))
    with pytest.MonkeyPatch.context() as mp:
        # connection files and IPython's profile go to the temporary folder, not the home directory
        mp.setenv("JUPYTER_RUNTIME_DIR", str(root / "runtime"))
        mp.setenv("IPYTHONDIR", str(root / "ipython"))
        yield root


def execute(nb, kernel_dir) -> str:
    """``nb`` run on the test's kernel (in a child process); returns everything the cells printed."""
    nb = notebooks.execute(nb, path=kernel_dir, kernel_dir=kernel_dir, timeout=120)
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    return "".join(o.text for o in outputs if o.output_type == "stream" and o.name == "stdout")


def with_answers(**answers):
    nb = nbformat.read(LAB, as_version=4)
    for cell in nb.cells:
        name = cell.source.split(" = ", 1)[0]
        if cell.cell_type == "code" and name in answers:
            cell.source = f"{name} = {answers[name]!r}"
    return nb


def line(printed: str, start: str) -> str:
    return next(ln for ln in printed.splitlines() if ln.startswith(start))


def numbers_after(printed: str, start: str) -> list[float]:
    """The numbers of the line starting with ``start``, after it ("[0. 1. 1.]" gives 0.0, 1.0, 1.0)."""
    return [float(x) for x in re.findall(r"-?\d+\.?\d*", line(printed, start)[len(start):])]


def test_the_lab_as_shipped_prints_the_course_numbers(kernel_dir):
    nb = nbformat.read(LAB, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import sys; print('kernel python:', sys.executable)"))
    printed = execute(nb, kernel_dir)
    assert line(printed, "kernel python:") == f"kernel python: {sys.executable}"

    # Section 6, query of love, step by step
    assert numbers_after(printed, "dot products q·k:") == [0.0, 1.0, 1.0]
    assert numbers_after(printed, "scores s = q·k / √2:") == [0.0, 0.7071, 0.7071]
    assert numbers_after(printed, "max of s:") == [0.7071]
    assert numbers_after(printed, "exp(s - max):") == [0.4931, 1.0, 1.0]
    assert numbers_after(printed, "sum of exp:") == [2.4931]
    assert numbers_after(printed, "weights a:") == [0.1978, 0.4011, 0.4011, 1.0]
    assert numbers_after(printed, "output for query love") == [4.4067, 4.41]
    # query of I
    assert numbers_after(printed, "weights for query I:") == [0.4011, 0.1978, 0.4011]
    assert numbers_after(printed, "output for query I") == [3.5933, 3.59]
    # Module 2's five steps on its 3x3 example
    assert numbers_after(printed, "row I:") == [0.4011, 0.1978, 0.4011, 6.0167, 3.9833]
    # unanswered exercises run without error and say so
    assert printed.count("Not answered yet. Hint:") == 3 and "correct" not in printed


def test_the_checks_accept_right_answers_and_hint_at_wrong_ones(kernel_dir):
    right = execute(with_answers(**ANSWERS), kernel_dir)
    assert right.splitlines().count("correct") == 3 and "Not" not in right
    wrong = execute(with_answers(answer_1=4.41, answer_2=0.1978, answer_3=4.0), kernel_dir)
    assert wrong.count("Not quite") == 3 and "correct" not in wrong


def test_the_lab_stands_alone_and_ships_clean():
    nb = nbformat.read(LAB, as_version=4)
    nbformat.validate(nb)
    imports = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        assert cell.outputs == [] and cell.execution_count is None  # shipped without outputs
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.Import):
                imports |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                imports.add(node.module.split(".")[0])
    assert imports == {"numpy"}  # not the project's core: the learner only has NumPy
    assert [c.source for c in nb.cells if c.cell_type == "code" and "# your answer here" in c.source] == [
        f"{name} = None  # your answer here" for name in ANSWERS]
