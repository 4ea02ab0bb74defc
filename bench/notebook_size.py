"""A saved notebook's size: one cell that displays the explorer, run by a real kernel and saved with its outputs.

    .venv/bin/python -m bench.notebook_size

Prints the notebook's size and, for each output, the size of each of its types: what a teacher's notebook weighs
on disk and in a shared drive. Byte counts, independent of the machine's load.
"""

from __future__ import annotations

import json

import nbformat

from testing.notebooks import execute
from tests.ui.conftest import ROOT

CELLS = ["from app import create_app", "create_app()"]


def main() -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nb = execute(nb, path=ROOT)
    print(f"{'cell':>4}  {'output':<14}  {'type':<44}  {'bytes':>10}")
    for k, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            for kind, value in out.get("data", {}).items():
                size = len(value if isinstance(value, str) else json.dumps(value))
                print(f"{k:>4}  {out['output_type']:<14}  {kind:<44}  {size:>10,}")
    print(f"saved notebook: {len(nbformat.writes(nb).encode()):,} bytes")


if __name__ == "__main__":
    main()
