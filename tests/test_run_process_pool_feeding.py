"""How the pool feeds its workers: how many batches a worker holds, and a worker started
while the next is still being forked gets its first batch at once.

The pool's bookkeeping is driven here with stand-ins for its workers (a worker as this side
holds it: the cases sent to it, whether it was told to stop), so that what is sent when is
exact, whatever the machine's load; the workers' own side is the other pool tests'."""

from __future__ import annotations

from collections import deque
from types import SimpleNamespace
from typing import Any

from harness.run.process_pool import DRY_SECS, MIN_BATCH, QUICK_DEPTH, QUICK_SECS, WorkerPool


class _Held:
    """A worker as the pool holds it: what it was sent, in batches."""

    def __init__(self) -> None:
        self.sent: deque[int] = deque()
        self.told = False
        self.batches: list[list[int]] = []

    def send(self, places: list[int], items: list[Any]) -> None:
        assert items == places  # the workers hold the suite: its places alone are sent
        self.batches.append(list(places))
        self.sent.extend(places)

    def stop(self) -> None:
        self.told = True


def _pool(cases: int, workers: list[_Held], wanted: int = 2, per_case: float = 3e-4) -> Any:
    """The pool's bookkeeping alone (no process started), its cases found to take a
    worker `per_case` seconds each (an own loop's: 0.3 ms)."""
    pool: Any = WorkerPool.__new__(WorkerPool)
    pool._per_case = per_case
    pool._spec = SimpleNamespace(suite=b"the suite's columns")
    pool._pending = list(range(cases))[::-1]  # the next last
    pool._cases, pool._total = [], cases
    pool._again = deque()
    pool._alone = None
    pool._stepwise = False
    pool._may_start = lambda: True
    pool._workers = workers
    pool._wanted = wanted
    pool._failures = []
    pool._ended_as = "it ended"
    return pool


def _fed(pool: Any, worker: _Held, quick: bool) -> int:
    """Batches sent to `worker` feeding it until it is busy enough."""
    before = len(worker.batches)
    for _ in range(10):
        pool._feed(worker, quick)
    return len(worker.batches) - before


def test_a_worker_of_quick_cases_holds_a_batch_running_and_two_waiting() -> None:
    # With one waiting, a batch of quick cases was done before this process, letting
    # reports pile up, sent the next: the worker sat idle between its batches.
    workers = [_Held(), _Held()]
    pool = _pool(200, workers)
    assert _fed(pool, workers[0], quick=True) == QUICK_DEPTH == 3
    done = workers[0].batches[0]
    for place in done:  # its first batch in: it takes one more, not two
        workers[0].sent.remove(place)
    assert _fed(pool, workers[0], quick=True) == 1


def test_quick_cases_whose_batch_takes_a_while_keep_one_waiting() -> None:
    # An SDK case takes milliseconds: a batch of them is time enough to send the next, and
    # more held by one worker would leave the other idle at the end.
    workers = [_Held(), _Held()]
    pool = _pool(200, workers, per_case=0.003)
    assert QUICK_SECS > 0.003 and MIN_BATCH * 0.003 >= DRY_SECS  # quick, yet a while
    assert _fed(pool, workers[0], quick=True) == 2


def test_a_worker_of_slow_cases_holds_one_running_and_one_waiting() -> None:
    # A slow case keeps what waits behind it from another worker: no more than that waits.
    workers = [_Held(), _Held()]
    pool = _pool(200, workers)
    assert _fed(pool, workers[0], quick=False) == 2


def test_the_last_quick_cases_still_go_a_few_at_once() -> None:
    workers = [_Held(), _Held()]
    pool = _pool(10, workers)
    _fed(pool, workers[0], quick=True)
    assert all(len(batch) >= min(MIN_BATCH, 5) for batch in workers[0].batches[:-1])


def _started(pool: Any) -> tuple[list[_Held], list[list[list[int]]]]:
    """The workers `pool` starts as it is replenished, and, as each after the first starts,
    the batches the first one held then."""
    started: list[_Held] = []
    first_had: list[list[list[int]]] = []

    def start() -> _Held:
        if started:
            first_had.append(list(started[0].batches))
        worker = _Held()
        started.append(worker)
        pool._workers.append(worker)
        return worker

    pool._start = start
    pool._replenish()
    return started, first_had


def test_a_worker_started_while_the_next_is_forked_has_its_first_batch_at_once() -> None:
    # The server forks the workers one after the other: the first starts its cases while
    # the pool waits for the second, with a share sized for both.
    pool = _pool(100, [])
    started, first_had = _started(pool)
    assert len(started) == 2
    (held,) = first_had
    assert [len(batch) for batch in held] == [100 // (4 * 2)]  # its share of two workers'
    assert started[1].batches == []  # the last one started is fed with the others, after


def test_a_single_worker_is_fed_with_the_others_not_as_it_starts() -> None:
    started, _ = _started(_pool(100, [], wanted=1))
    assert len(started) == 1 and started[0].batches == []


def test_a_long_suite_of_quick_cases_goes_a_thousand_at_once_and_its_last_fewer() -> None:
    # What this process spends on a batch and its runs of passes was 6% of its CPU at
    # 20,000 own-loop cases in batches of 256.
    workers = [_Held(), _Held()]
    pool = _pool(20_000, workers)
    _fed(pool, workers[0], quick=True)
    assert len(workers[0].batches[0]) >= 1000
    while pool._pending:  # each batch done as soon as it is sent: the suite drains
        workers[0].sent.clear()
        _fed(pool, workers[0], quick=True)
    assert len(workers[0].batches[-1]) <= MIN_BATCH
