"""Panel views over one session's :class:`~session.state.AttentionState`."""
