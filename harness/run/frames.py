"""The frames of a worker's pipe, as multiprocessing's `Connection.send` writes them (a
signed 4-byte length, or -1 and an 8-byte one, then the pickled message): made
(`framed(dumps(message))`) and read (`frame`, `missing`, `loaded`) by the harness's side
of its workers (`pool_workers.Worker`), which writes and reads the pipe itself. A frame
no worker writes (a length no message has, bytes that are no message: something else in
the worker wrote to the pipe) is `BadFrame`: the pipe is taken for ended."""

from __future__ import annotations

import pickle
from typing import Any

# The largest message a frame may say it holds: a case's report (its transcript included)
# is far under it; a length past it (or a negative one) is a corrupt frame, the worker's
# end, as a pipe that closed is.
MAX_MESSAGE = 1 << 32


class BadFrame(EOFError):
    """A frame no worker writes: what follows cannot be told apart, so the pipe is taken
    for ended (its worker is then stopped, its case's run error)."""


def dumps(message: tuple[Any, ...]) -> bytes:
    from multiprocessing.reduction import ForkingPickler

    return bytes(ForkingPickler.dumps(message))


def framed(payload: bytes) -> bytes:
    """`payload` behind the header multiprocessing's `Connection.send` writes: its length,
    signed, in 4 bytes, or -1 and the length in 8 for one of 2 GiB or more."""
    size = len(payload)
    if size > 0x7FFFFFFF:
        return (-1).to_bytes(4, "big", signed=True) + size.to_bytes(8, "big") + payload
    return size.to_bytes(4, "big", signed=True) + payload


def _header(data: bytearray, at: int) -> tuple[int, int] | None:
    """The header's length and the message's size of the frame at `at`, when its header
    is whole in `data`; else None. `BadFrame` for a length no message has."""
    if len(data) - at < 4:
        return None
    size, head = int.from_bytes(data[at : at + 4], "big", signed=True), 4
    if size == -1:
        if len(data) - at < 12:
            return None
        size, head = int.from_bytes(data[at + 4 : at + 12], "big"), 12
    if size < 0 or size > MAX_MESSAGE:
        raise BadFrame(f"a frame of the worker's pipe says {size} bytes")
    return head, size


def frame(data: bytearray, at: int) -> tuple[int, int] | None:
    """`_header` of the frame at `at`, when the whole frame is in `data`; else None."""
    header = _header(data, at)
    if header is None:
        return None
    head, size = header
    return header if len(data) - at - head >= size else None


def missing(data: bytearray) -> int:
    """How many bytes the frame begun in `data` still lacks (0: none is begun, or its
    header is not whole yet)."""
    header = _header(data, 0)
    if header is None:
        return 0
    head, size = header
    return max(0, head + size - len(data))


def loaded(payload: bytearray) -> tuple[Any, ...]:
    """The message a whole frame's `payload` holds: a worker sends tuples, its kind first.
    `BadFrame` for anything else (bytes no pickle reads, or a pickle of something else)."""
    try:
        message = pickle.loads(payload)
    except Exception as exc:  # whatever the bytes make unpickling raise
        raise BadFrame(f"a frame of the worker's pipe holds no message: {exc}") from None
    if type(message) is not tuple or not message:
        raise BadFrame("a frame of the worker's pipe holds no message")
    return message
