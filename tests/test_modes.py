"""`harness.modes`: the suite kind from `--suite-kind` or the suite directory's name."""

from __future__ import annotations

import pytest

from harness.modes import resolve_kind

# --- suite kinds ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("explicit", "directory", "kind"),
    [
        (None, "evals/regression", "regression"),
        (None, "evals/capability", "capability"),
        (None, "evals/capability/", "capability"),
        (None, "evals\\capability", "capability"),
        (None, "evals/live", "live"),
        (None, "capability", "capability"),
        (None, "evals/my-cases", "regression"),
        (None, "evals/capability-extra", "regression"),
        ("capability", "evals/regression", "capability"),
        ("regression", "evals/capability", "regression"),
        ("live", "anything", "live"),
    ],
)
def test_resolve_kind(explicit: str | None, directory: str, kind: str) -> None:
    assert resolve_kind(explicit, directory) == kind


def test_resolve_kind_refuses_unknown_kinds() -> None:
    with pytest.raises(ValueError, match="nightly"):
        resolve_kind("nightly", "evals/regression")
