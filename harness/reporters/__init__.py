"""Reporters: every output of a run (the table, JSON, JUnit, the Markdown summary, GitHub
annotations, history, HTML) is one module here, found by `registry`; beside them, what they
share (`base`) and what shows one case to a person (`case_view`, `html_transcript`,
`claims`) or keeps the last run for `show` (`last_run`)."""
