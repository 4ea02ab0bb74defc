"""Panel views over one session's :class:`~widgets.state.AttentionState`."""
