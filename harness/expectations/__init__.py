"""Expectation kinds: each module owns its fields of `expects`, their admission rules and
their grading; `registry` finds them and grades in their declared order."""
