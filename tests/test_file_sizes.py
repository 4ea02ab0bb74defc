"""One file, one thing: no file of the product is longer than a reader can hold, at most 600 lines of Python and 500
of JavaScript. The product is ``app.py`` and the folders the page is made of; the tests, the benchmarks and what they
share (``tests/``, ``bench/``, ``testing/``) are not held to it."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The product's files: app.py and these folders, every file in them.
PRODUCT = ("core", "course", "session", "link", "widgets", "server")
#: The most lines a file of each kind may have.
LIMITS = {".py": 600, ".js": 500}
#: Files allowed past the limit, each with why (none).
KNOWN: set[str] = set()


def product_files():
    yield ROOT / "app.py"
    for folder in PRODUCT:
        yield from sorted(p for p in (ROOT / folder).rglob("*") if p.suffix in LIMITS and "__pycache__" not in p.parts)


def test_the_product_is_made_of_files_of_one_thing_each():
    files = list(product_files())
    assert len(files) > 100 and all(f.is_file() for f in files)  # the folders are where this test looks
    too_long = []
    for path in files:
        name = path.relative_to(ROOT).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > LIMITS[path.suffix] and name not in KNOWN:
            too_long.append(f"{name}: {lines} lines (at most {LIMITS[path.suffix]})")
    assert not too_long, "split these into files of one thing each:\n" + "\n".join(too_long)
