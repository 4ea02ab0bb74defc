"""The link between one page's state and its browser: each channel's Python end, its JavaScript beside it.

**The drag's contract** (the one place it is written; every file of a drag points here): the page draws
each position of a drag itself, with its mirror of the core (``link/attention.js``), and sends the server
its positions through the channel's row, at most one unanswered at a time, the press and the release always
(``link/outbox.js``); the server computes each position it takes with the NumPy core, paced
(``link/channel.py``), and answers its ``seq`` in ``confirmed``, with numbers that replace the page's:
the readout's during the drag, every view's at the release (``link/shown.py``). What the page needs besides the
position (K, V, the mask row, the plane, the grab radius, line widths, decimals, the texts' templates) the
server sends in the channel's ``inputs`` row, so no constant is written on both sides.
"""
