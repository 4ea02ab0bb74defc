"""Pointers in the docs and the code lead somewhere: every relative link of a Markdown file reaches a file (and its
heading, for a ``#anchor``), and every pointer to a section of a document (``README, "Settings"``,
``docs/operations.md, "Several processes"``), in a Markdown file or in the code's comments and docstrings, names a
heading that document has (or, in bench/RESULTS.md, a target's row)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Folders that are not the project's own text: environments, caches, what tests and benchmarks write.
SKIPPED = {".git", ".venv", "node_modules", "__pycache__", ".pytest_cache", ".ruff_cache", "screenshots", "out"}
#: The files whose text may hold a pointer: documents, code and configuration.
TEXT = {".md", ".py", ".js", ".mjs", ".css", ".conf", ".sh", ".toml", ".yml", ".yaml", ".cfg", ".txt", ".ipynb"}
NAMED = {"Dockerfile", "run", "test", "serve", "_env.sh"}

#: ``[text](target)`` in Markdown (not an image's data, not a link inside a code span).
LINK = re.compile(r"(?<!`)\[[^\]\n]*\]\(([^)\s]+)\)")
#: ``README, "Section"``, ``README "Section"``, ``the README's "Section"``, ``docs/operations.md, section "Settings"``,
#: ``[docs/architecture.md](docs/architecture.md), "Tests" and "Test hooks"``: a document, then one or more sections.
POINTER = re.compile(r"(?P<doc>\bREADME(?:\.md)?|[\w./-]+\.md)\)?(?:'s)?,?[ \t]+(?:section[ \t]+)?"
                     r"(?P<sections>[\"“][^\"”\n]+[\"”](?:(?:,[ \t]*|[ \t]+and[ \t]+)[\"“][^\"”\n]+[\"”])*)")
QUOTED = re.compile(r"[\"“]([^\"”\n]+)[\"”]")


def project_files(suffixes=None):
    """The project's own text files (every one, or those with the given suffixes)."""
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED)
        for name in sorted(files):
            path = Path(top) / name
            if (path.suffix in suffixes) if suffixes is not None else (path.suffix in TEXT or name in NAMED):
                yield path


def headings(doc: Path) -> list[str]:
    """A Markdown file's headings, as text: formatting marks and links taken out."""
    out, fenced = [], False
    for line in doc.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)):
            out.append(re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m[1]).replace("`", "").replace("*", "").strip())
    return out


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _resolve(doc: str, where: Path) -> Path | None:
    if doc.startswith("README"):
        return ROOT / "README.md"
    for base in (where.parent, ROOT, ROOT / "docs"):
        if (base / doc).is_file():
            return (base / doc).resolve()
    return None


def _has_section(doc: Path, section: str) -> bool:
    """Whether ``doc`` has a heading ``section`` (or one that begins ``section:``), or a table row whose first
    cell begins with it (bench/RESULTS.md's targets)."""
    wanted = " ".join(section.replace("`", "").split()).lower()
    if any(h.lower() == wanted or h.lower().startswith(wanted + ":") for h in headings(doc)):
        return True
    return any(line.replace("`", "").lower().startswith("| " + wanted) for line in doc.read_text().splitlines())


def test_every_relative_link_in_the_docs_leads_somewhere():
    broken = []
    for md in project_files({".md"}):
        text = re.sub(r"```.*?```", "", md.read_text(), flags=re.S)  # code blocks hold no links
        for target in LINK.findall(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:, data:
                continue
            path, _, anchor = target.partition("#")
            dest = (md.parent / path).resolve() if path else md
            where = f"{md.relative_to(ROOT)}: ({target})"
            if not dest.exists():
                broken.append(f"{where}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in {slug(h) for h in headings(dest)}:
                broken.append(f"{where}: no heading #{anchor}")
    assert not broken, "\n".join(broken)


def pointers(path: Path):
    """Each (line, document, section) that ``path``'s text points to."""
    text = path.read_text(errors="replace")
    for m in POINTER.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        for section in QUOTED.findall(m["sections"]):
            yield line, m["doc"], section


def test_every_pointer_to_a_section_names_one_the_document_has():
    stale, seen = [], 0
    for path in project_files():
        if path == Path(__file__).resolve():  # this file's examples
            continue
        for line, doc, section in pointers(path):
            seen += 1
            target = _resolve(doc, path)
            where = f"{path.relative_to(ROOT)}:{line}: {doc}, \"{section}\""
            if target is None:
                stale.append(f"{where}: no such document")
            elif not _has_section(target, section):
                stale.append(f"{where}: {target.relative_to(ROOT)} has no such section")
    assert not stale, "\n".join(stale)
    assert seen >= 5, "found almost no pointer: the pattern no longer matches how the docs write them"


@pytest.mark.parametrize("text, found", [
    ('settings (README, "Settings"); more', [("README", "Settings")]),
    ('(README "Several processes")', [("README", "Several processes")]),
    ("the README's “Tests and test hooks”", [("README", "Tests and test hooks")]),
    ('[docs/architecture.md](docs/architecture.md), "Tests" and "Test hooks"',
     [("docs/architecture.md", "Tests"), ("docs/architecture.md", "Test hooks")]),
    ('docs/operations.md, section "Settings"', [("docs/operations.md", "Settings")]),
    ("a README says what it lacks", []),
])
def test_a_pointer_is_read_as_written(tmp_path, text, found):
    path = tmp_path / "x.py"
    path.write_text(text)
    assert [(doc, section) for _, doc, section in pointers(path)] == found


def test_a_stale_pointer_and_a_broken_link_are_found(tmp_path):
    doc = tmp_path / "guide.md"
    doc.write_text("# Guide\n\n## Settings\n\nSee [the rest](missing.md) and [here](#settings), [gone](#nowhere).\n")
    assert _has_section(doc, "Settings") and not _has_section(doc, "Several processes")
    assert [slug(h) for h in headings(doc)] == ["guide", "settings"]
    assert _resolve("README", doc) == ROOT / "README.md" and not _has_section(ROOT / "README.md", "Settings")
