"""Run a notebook on a real kernel in a child process, so no kernel client lives in the test's own process.

A kernel client's ZeroMQ context and asyncio loop, once garbage-collected inside a Playwright call, stopped
Playwright's event loop ("Event loop stopped before Future completed") and left the worker's later tests in a loop
that was still marked running. In a child process they end with it.

``python -m testing.notebooks IN OUT --path DIR [--kernel-dir DIR] [--timeout S]`` is the child.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]


def execute(nb: nbformat.NotebookNode, *, path: Path, kernel_dir: Path | None = None,
            timeout: float = 600) -> nbformat.NotebookNode:
    """``nb`` run cell by cell with nbclient on a ``python3`` kernel, started in ``path``; returns the notebook
    with its outputs.

    ``kernel_dir``: a folder whose ``kernels/python3/kernel.json`` is the only kernel spec looked at (else
    Jupyter's own search path). The child inherits this process's environment.

    Raises ``AssertionError`` with the child's output when a cell fails or the run takes over ``timeout`` s.
    """
    with tempfile.TemporaryDirectory() as tmp:
        source, result = Path(tmp) / "in.ipynb", Path(tmp) / "out.ipynb"
        nbformat.write(nb, source)
        command = [sys.executable, "-m", "testing.notebooks", str(source), str(result), "--path", str(path),
                   "--timeout", str(timeout)]
        if kernel_dir is not None:
            command += ["--kernel-dir", str(kernel_dir)]
        # run from the project's folder: ``-m`` puts it on the child's path
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout + 60)
        assert done.returncode == 0, f"the notebook failed:\n{done.stdout}\n{done.stderr}"
        return nbformat.read(result, as_version=4)


def _main() -> None:
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    parser = argparse.ArgumentParser()
    parser.add_argument("source")
    parser.add_argument("result")
    parser.add_argument("--path", required=True)
    parser.add_argument("--kernel-dir")
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    nb = nbformat.read(args.source, as_version=4)
    km = None
    if args.kernel_dir:
        specs = KernelSpecManager(kernel_dirs=[str(Path(args.kernel_dir) / "kernels")], ensure_native_kernel=False)
        km = KernelManager(kernel_name="python3", kernel_spec_manager=specs)
    NotebookClient(nb, km=km, kernel_name="python3", timeout=args.timeout,
                   resources={"metadata": {"path": args.path}}).execute()
    nbformat.write(nb, args.result)


if __name__ == "__main__":
    _main()
