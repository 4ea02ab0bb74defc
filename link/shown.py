"""What the page's plots show: the state's result, except while the page draws a drag of q itself.

The drag's contract (``link/__init__.py``) has the page draw each position of its own drag of q; the server
sends the plots its numbers only at the release. So the plots render :attr:`PlotsShown.result`, not the
state's: it follows ``AttentionState.result`` except while :attr:`PlotsShown.previewing`, which the drag channel
(``link/drag.py``) sets from the press to the release and which anything else ends.
"""

from __future__ import annotations

from contextlib import contextmanager

import param

from core import AttentionResult
from session.state import AttentionState


class PlotsShown(param.Parameterized):
    """The result a page's plots draw (``result``) and whether the page is drawing a drag of q (``previewing``).

    One per page, shared by the plots, the address (``link/browser.py``) and the drag channel that drives it.
    A view built without one gets its own, which nothing drives: it then follows the state's result.
    ``previewing`` ends on any change of the numbers' inputs, and any setting of q, other than a position of
    the drag itself (:meth:`drag_move`).
    """

    state = param.ClassSelector(class_=AttentionState)
    previewing = param.Boolean(default=False, doc=(
        "The page is drawing a drag of the query itself, from the press to the release (link/drag.py)."))
    result = param.ClassSelector(class_=AttentionResult, doc=(
        "The state's `result`, except while `previewing`: then the one from before the drag's first position, "
        "which the plots keep until the release."))

    def __init__(self, **params):
        super().__init__(**params)
        self.result = self.state.result
        self._drag_move = False  # the state is taking a position of the drag: it does not end the preview
        self.state.param.watch(self._changed, "result")
        # every setting of q, also one that leaves it where it was (an arrow key against the plane's edge)
        self.state.param.watch(self._changed, "query", onlychanged=False)

    @contextmanager
    def drag_move(self):
        """Within the block, the state's changes are a position of the page's drag of q."""
        self._drag_move = True
        try:
            yield
        finally:
            self._drag_move = False

    def _changed(self, *_):
        if not self._drag_move:
            self.previewing = False
        self._follow()

    @param.depends("previewing", watch=True)
    def _follow(self):
        if not self.previewing and self.result is not self.state.result:
            self.result = self.state.result
