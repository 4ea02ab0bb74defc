"""The link between one page's state and its browser: each channel's Python end, its JavaScript beside it.

**The drag's contract** (the one place it is written; every file of a drag points here): the page draws
each position of a drag itself, with its mirror of the core (``link/attention.js``), and sends the server
its positions through the channel's row, at most one unanswered at a time, the press and the release always
(``link/outbox.js``); the server computes each position it takes with the NumPy core, paced
(``link/channel.py``), and answers its ``seq`` in ``confirmed``, with numbers that replace the page's:
the readout's during the drag, every view's at the release (``link/shown.py``). What the page needs besides the
position (K, V, the mask row, the plane, the grab radius, line widths, decimals, the texts' templates) the
server sends in the channel's ``inputs`` row. The page's other scripts get what they share with the server the
same way, as their component's values (the Train tab's ink threshold) or written before the script (the nudge's
steps, a poll card's browser id): a constant is written on the server's side only. Each rule the page mirrors (the
formula, the number format, the readout's text, the grab, a nudge, the Projections and Train tabs' forward passes)
is checked under ``node --test tests/js/`` against cases the server's own code writes
(``tests/golden_reference.py``).
"""
