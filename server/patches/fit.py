"""What a patch is, and whether the upstream code it replaces is still the code it was written for.

A :class:`Patch` names each upstream object it replaces, wraps or relies on (``"module:Qualified.name"``) with the
fingerprint of that object's source as it was when the patch was written (:func:`fingerprint`: SHA-256 of
``inspect.getsource``, dedented, first 16 hex digits), for the versions pinned in requirements.txt. Before a patch is
applied, every one of its objects is looked up and fingerprinted again (:meth:`Patch.check`): each is ``OK`` (the
same source), ``CHANGED`` (another source under the same name: an upgrade changed it) or ``MISSING`` (the name is
gone). A patch is applied only if all of its objects are ``OK``; otherwise it is left out, with one log line naming
what no longer fits, and the library's own code runs (:meth:`Patch.fits`). Every patch here is an optimisation or a
guard over upstream behaviour that works without it, so a server whose libraries moved still serves, as the library
serves, and says so; ``python -m server --check-patches`` says it before anything is served.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import logging
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

log = logging.getLogger("server.patches")

OK, CHANGED, MISSING = "OK", "CHANGED", "MISSING"


def resolve(target: str):
    """The upstream object ``target`` names (``"package.module:Class.attribute"``), as its library defines it.

    A class's attribute is read from the class (or the first base along its MRO) that defines it, without calling
    descriptors: a classmethod or staticmethod gives its function, a property its getter. A function this app put in
    its place (marked with ``__wrapped__``, as ``functools.update_wrapper`` marks it) gives the one it wraps.
    Raises ImportError or AttributeError when the name is not there.
    """
    module_name, _, qualname = target.partition(":")
    obj = importlib.import_module(module_name)
    for part in qualname.split("."):
        if isinstance(obj, type):
            owner = next((klass for klass in obj.__mro__ if part in vars(klass)), None)
            if owner is None:
                raise AttributeError(f"{obj.__qualname__} has no {part}")
            obj = vars(owner)[part]
        else:
            obj = getattr(obj, part)
        if isinstance(obj, (classmethod, staticmethod)):
            obj = obj.__func__
        elif isinstance(obj, property):
            obj = obj.fget
    return inspect.unwrap(obj)


def fingerprint(obj) -> str:
    """The first 16 hex digits of the SHA-256 of ``obj``'s source (dedented). Raises OSError or TypeError where
    Python cannot find its source."""
    source = textwrap.dedent(inspect.getsource(obj))
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Found:
    """One upstream object of a patch as installed now: its fingerprint then and now, and the verdict."""

    patch: Patch
    target: str
    expected: str
    found: str  # "" when the object is missing
    status: str  # OK, CHANGED or MISSING

    def describe(self) -> str:
        if self.status == MISSING:
            return f"{self.target} MISSING"
        return f"{self.target} {self.status} (expected {self.expected}, found {self.found})"


@dataclass(eq=False)
class Patch:
    """One change to an upstream library's code: what it changes (``changes``, one line), the upstream objects it
    replaces, wraps or relies on with their fingerprints when it was written (``targets``), the versions it was
    written for (``written_for``), the upstream issue about it (``upstream``: ``"owner/repo#N"``, or what says there
    is none) and ``apply``, which makes the change (idempotent; None for a patch used where its code runs, not
    installed: a subclass, a context manager). ``leaves_out`` False: a patch whose code cannot be left out from here
    (a subclass the views define themselves); one that no longer fits is then said in the log all the same.

    ``name`` is the module that holds it (``server.patches.<name>``).
    """

    name: str
    changes: str
    targets: Mapping[str, str]
    written_for: str
    upstream: str
    apply: Callable[[], object] | None = None
    leaves_out: bool = True
    _fits: bool | None = field(default=None, init=False, repr=False)

    def check(self) -> list[Found]:
        """Each of :attr:`targets` looked up and fingerprinted now."""
        results = []
        for target, expected in self.targets.items():
            try:
                found = fingerprint(resolve(target))
            except (ImportError, AttributeError, OSError, TypeError):
                results.append(Found(self, target, expected, "", MISSING))
                continue
            results.append(Found(self, target, expected, found, OK if found == expected else CHANGED))
        return results

    def fits(self) -> bool:
        """Whether every upstream object is the one this patch was written for; checked once per process, and when
        it does not fit, said once in the log (one line: the patch, what it changes, and each object that moved)."""
        if self._fits is None:
            misfits = [r for r in self.check() if r.status != OK]
            self._fits = not misfits
            if misfits:
                what = ("not applied", "the library's own code runs instead") if self.leaves_out else (
                    "no longer fits", "it is used as it is: check it against the installed library")
                log.error("Patch server.patches.%s %s (%s; written for %s): %s; %s (python -m server --check-patches)",
                          self.name, what[0], self.changes, self.written_for, "; ".join(r.describe() for r in misfits),
                          what[1])
        return self._fits

    def install(self) -> bool:
        """Apply the patch if it fits (:meth:`fits`); whether it is in force."""
        if not self.fits():
            return False
        if self.apply is not None:
            self.apply()
        return True
