"""Atomic report files: a reader sees the old file or the whole new one, never a half."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from harness.errors import HarnessError


class ReportWriteError(HarnessError):
    """A report file could not be written; the run stops before printing its verdict."""


def write_atomic(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    except OSError as exc:
        raise ReportWriteError(f"{path}: cannot write report: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise ReportWriteError(f"{path}: cannot write report: {exc.strerror or exc}") from None
