"""The link between one page's state and its browser: each channel's Python end, its JavaScript beside it."""
