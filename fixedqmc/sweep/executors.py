"""Where the tasks of a sweep or a tuning run: this process, a local pool, or a Dask cluster.

:class:`Tasks` runs calls ``fn(*args)`` and yields their results as they finish:

* ``workers=1``: one after the other in this process;
* ``workers=N`` (N > 1): a pool of N spawned processes, each with its share of the cores
  (numba threads), kept for the life of the :class:`Tasks` so that every worker compiles
  its kernels once however many batches it is given;
* a ``dask.distributed.Client`` (or ``scheduler="tcp://host:port"``, :func:`dask_client`):
  while the scheduler has no worker a status line comes every few seconds, and after
  ``wait_s`` seconds without one the run stops with a clear error (what finished is the
  caller's to keep: a rerun resumes).
"""

from __future__ import annotations

import os
import re
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

from fixedqmc.errors import FixedQMCError
from fixedqmc.progress import INTERVAL_S, say

#: seconds between two looks at unfinished Dask tasks and the scheduler's workers
DASK_POLL_S = 0.5
#: default seconds a Dask run waits while its scheduler has no worker before it stops
WORKER_WAIT_S = 300.0


def dask_client(scheduler):
    """A dask.distributed Client for an address (fail fast, naming it) or as given."""
    if scheduler is None or not isinstance(scheduler, str):
        return scheduler
    if not re.fullmatch(r"(?:(?:tcp|tls|ucx|ws|wss)://)?[\w.\-\[\]:]+:\d+", scheduler):
        raise FixedQMCError(f"--scheduler {scheduler!r} is not a Dask scheduler address; "
                            "expected tcp://HOST:PORT (or HOST:PORT)")
    try:
        from distributed import Client
    except ImportError:
        raise FixedQMCError("--scheduler needs dask.distributed (pip install distributed)") from None
    try:
        return Client(scheduler, timeout="10s")
    except (OSError, TimeoutError) as exc:
        raise FixedQMCError(f"cannot reach the Dask scheduler at {scheduler!r}: {exc}") from None


def _call(fn, args, threads: int):
    """``fn(*args)`` with ``threads`` numba threads (a local pool worker's share)."""
    import numba
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    return fn(*args)


class Tasks:
    """Runs task calls where the caller chose (module docstring); a context manager that
    shuts its local pool down on exit.  ``label`` and ``what``: the command and the noun of
    its messages (``sweep``, ``points``; ``tune``, ``plans``)."""

    def __init__(self, workers: int = 2, client=None, wait_s: float | None = None,
                 progress=None, label: str = "sweep", what: str = "points"):
        self.workers, self.client, self.progress = workers, client, progress
        self.label, self.what = label, what
        self.wait_s = WORKER_WAIT_S if wait_s is None else wait_s
        self._pool = None

    def __enter__(self) -> Tasks:
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def run(self, fn, calls, total: int | None = None):
        """Yield ``fn(*args)`` for every ``args`` of ``calls`` as each finishes (``total``:
        the run's tasks, for messages)."""
        calls = list(calls)
        if self.client is not None:
            yield from self._dask(fn, calls, total or len(calls))
        elif self.workers <= 1:
            for args in calls:
                yield fn(*args)
        else:
            if self._pool is None:
                import multiprocessing as mp
                self._pool = ProcessPoolExecutor(max_workers=self.workers,
                                                 mp_context=mp.get_context("spawn"))
            threads = max(1, (os.cpu_count() or 1) // self.workers)
            futures = [self._pool.submit(_call, fn, args, threads) for args in calls]
            try:
                for fut in as_completed(futures):
                    yield fut.result()
            finally:
                for fut in futures:
                    fut.cancel()

    def _dask(self, fn, calls, total):
        """Results of calls computed on the Dask cluster, as they finish (module docstring:
        what happens while the scheduler has no worker)."""
        client, what = self.client, self.what
        address = getattr(client, "scheduler", None)
        address = getattr(address, "address", None) or "the scheduler"
        pending = [client.submit(fn, *args, pure=False) for args in calls]
        alone_since = said = None
        try:
            while pending:
                done = [f for f in pending if f.done()]
                for f in done:
                    pending.remove(f)
                    yield f.result()
                if done:
                    continue
                now = time.monotonic()
                try:
                    workers = len(client.scheduler_info()["workers"])
                except Exception:  # the client lost its scheduler: no workers to be had
                    workers = 0
                if workers:
                    alone_since = said = None
                else:
                    alone_since = alone_since or now
                    gone = now - alone_since
                    if gone >= self.wait_s:
                        raise FixedQMCError(
                            f"the Dask scheduler at {address} has had no worker for {gone:.0f} "
                            f"s (--worker-wait {self.wait_s:g}); {total - len(pending)} of "
                            f"{total} {what} are finished and saved: start workers (or run "
                            "without --scheduler) and run the same command again to resume")
                    if said is None or now - said >= INTERVAL_S:
                        say(self.progress, f"{self.label}: waiting for Dask workers at {address}: none for "
                            f"{gone:.0f} s (stopping after {self.wait_s:g} s), "
                            f"{len(pending)} {what} to go")
                        said = now
                time.sleep(DASK_POLL_S)
        finally:
            for f in pending:
                f.cancel()
