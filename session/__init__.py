"""One learner's page: its state, its address, its language."""
