"""Reporters: every output of a run (the table, JSON, JUnit, the Markdown summary, GitHub
annotations, history) is one module here, found by `registry`."""
