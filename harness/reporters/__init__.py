"""Reporters: every output of a run (the table, JSON, JUnit, the Markdown summary, GitHub
annotations, history, HTML) is one module here, found by `registry`; beside them, what they
share (`base`), the flags of those that write nothing unless given one (`flags`: their
modules imported only then), and what shows one case to a person (`case_view`,
`html_transcript`, `claims`) or keeps the last run for `show` (`last_run`)."""
