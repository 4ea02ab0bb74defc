"""Teaching content: the course's questions, their rules and the learner's records (standard library only)."""
