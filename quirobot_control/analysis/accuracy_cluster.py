"""The accuracy budget's samples on Dask (distributed): a local cluster or an existing scheduler.

Each sample depends on (seed, index) only (analysis.accuracy.sample_rngs), so a run gives the
same numbers whatever the worker count and the order the workers finish in; the results are put
back in index order. One thread per worker process: a sample is a MuJoCo closed loop holding
the GIL, so threads would not run side by side. dask and distributed are imported here only
(`pip install dask distributed`), so the rest of the budget does not need them.

When a local cluster pays (`cluster_pays`), measured on the 2-core CI machine (bench/accuracy.py
section 3, docs/accuracy.md): one sample takes about 5 s in this process; a local cluster costs
about 1-3 s to start (LocalCluster and Client ready) and each fresh worker about 5 s of CPU
before its first sample ends (a nanny and a worker process, each importing distributed and the
`quirobot` entry script; then the budget's modules, scipy, the xacro expansion and the first
MuJoCo model), against about 0.7 s for the same first-call costs in this process. On W idle
cores a cluster saves n*t*(1 - 1/W) on n samples of t seconds: on 2 cores that passes its
start-up from 3-4 samples, but a core busy elsewhere takes the gain away (4 samples took 29 s on
the cluster against about 20 s here). From DASK_MIN_SAMPLES samples the gain on an idle machine
(about 15 s of 40) outweighs the loss on a loaded one (about the start-up).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from quirobot_control.analysis.accuracy import BudgetSetup

#: Fewest samples a default run sends to a local Dask cluster (module docstring: the measurements).
DASK_MIN_SAMPLES = 8


def cluster_pays(samples: int, cores: int) -> bool:
    """Whether a local cluster on `cores` cores finishes `samples` samples sooner than this process."""
    return cores >= 2 and samples >= DASK_MIN_SAMPLES


def dask_runner(workers: int | None = None, scheduler: str | None = None) -> Callable:
    """A `runner` for run_accuracy: on the scheduler at `scheduler` (an address such as
    tcp://host:8786) or on a local cluster of `workers` processes (default: one per core; never
    more than the samples, an idle worker costs its start-up and gains nothing)."""

    def run(setup: BudgetSetup, samples: int, progress: Callable[[int], None] | None) -> list:
        try:
            import dask
            from distributed import Client, LocalCluster, as_completed
        except ImportError as error:
            raise RuntimeError(
                "the Dask runner needs dask and distributed: pip install dask distributed"
            ) from error
        from quirobot_control.analysis.accuracy import run_indexed_sample

        cluster = None
        if scheduler is None:
            # The workers' statistical profiler samples every stack each 10 ms for a dashboard
            # this cluster does not have.
            with dask.config.set({"distributed.worker.profile.enabled": False}):
                cluster = LocalCluster(
                    n_workers=min(workers or local_cores(), samples),
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                )
        client = Client(scheduler if scheduler is not None else cluster)
        try:
            shared = client.scatter(setup, broadcast=True)  # sent once per worker, not per sample
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
