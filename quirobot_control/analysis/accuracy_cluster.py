"""The accuracy budget's samples on Dask (distributed): a local cluster or an existing scheduler.

Each sample depends on (seed, index) only (analysis.accuracy.sample_rngs), so a run gives the
same numbers whatever the worker count and the order the workers finish in; the results are put
back in index order. One thread per worker process: a sample is a MuJoCo closed loop holding
the GIL, so threads would not run side by side. dask and distributed are imported here only
(`pip install dask distributed`), so the rest of the budget does not need them.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from quirobot_control.analysis.accuracy import BudgetSetup, run_indexed_sample


def dask_runner(workers: int | None = None, scheduler: str | None = None) -> Callable:
    """A `runner` for run_accuracy: on the scheduler at `scheduler` (an address such as
    tcp://host:8786) or on a local cluster of `workers` processes (default: one per core)."""

    def run(setup: BudgetSetup, samples: int, progress: Callable[[int], None] | None) -> list:
        try:
            from distributed import Client, LocalCluster, as_completed
        except ImportError as error:
            raise RuntimeError(
                "the Dask runner needs dask and distributed: pip install dask distributed"
            ) from error
        cluster = None
        if scheduler is None:
            cluster = LocalCluster(
                n_workers=workers or local_cores(),
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
            )
        client = Client(scheduler if scheduler is not None else cluster)
        try:
            shared = client.scatter(setup, broadcast=True)
            futures = client.map(run_indexed_sample, [shared] * samples, range(samples), pure=False)
            index = {future.key: k for k, future in enumerate(futures)}
            outcomes: list = [None] * samples
            for done, future in enumerate(as_completed(futures), start=1):
                outcomes[index[future.key]] = future.result()
                if progress is not None:
                    progress(done)
            return outcomes
        finally:
            client.close()
            if cluster is not None:
                cluster.close()

    return run


def local_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
