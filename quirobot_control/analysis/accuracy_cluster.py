"""The accuracy budget's samples on Dask (distributed): a local cluster or an existing scheduler.

Each sample depends on (seed, index) only (analysis.accuracy.sample_rngs), so a run gives the
same numbers whatever the worker count and the order the workers finish in; the results are put
back in index order. One thread per worker process: a sample is a MuJoCo closed loop holding
the GIL, so threads would not run side by side. dask and distributed are imported here only
(`pip install dask distributed`), so the rest of the budget does not need them.

When a local cluster pays (`cluster_pays`), measured on the 2-core CI machine (bench/accuracy.py
section 3, docs/accuracy.md): one sample takes about 0.6-0.7 s in this process (issue 36 made it
a quarter of what it was); a local cluster of 2 costs about 0.7 s to start (LocalCluster and
Client ready, the workers having imported distributed and the budget) and a fresh worker's first
sample about 0.4-0.65 s more than later ones (scipy, the xacro expansion, the first MuJoCo model).
On W idle cores a cluster saves about n*t*(1 - 1/W) on n samples of t seconds, so on idle cores it
pays from about 6 samples (4 samples: 2.9-3.3 s in this process, 3.1-3.4 s on the cluster). The
machine is often shared
(CI runners, other jobs): a worker on a core busy elsewhere runs at half its speed or less, and
the cluster then loses (8 samples: 49 s on the cluster, 35 s in this process, load average 3-6
on 2 cores). Hence the default: a worker per idle core (`idle_cores`: the cores less the
1-minute load average), the cluster only with 2 idle cores or more and DASK_MIN_SAMPLES samples
or more, a margin over the idle break-even for a load that rises during the run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from quirobot_control.analysis.accuracy import BudgetSetup

#: Fewest samples a default run sends to a local Dask cluster (module docstring: the measurements).
DASK_MIN_SAMPLES = 10


def cluster_pays(samples: int, idle: int) -> bool:
    """Whether a local cluster on `idle` idle cores finishes `samples` samples sooner than this
    process (module docstring)."""
    return idle >= 2 and samples >= DASK_MIN_SAMPLES


def idle_cores() -> int:
    """The cores this process may run on less the 1-minute load average (rounded, at least 0):
    a worker on a core busy elsewhere gains nothing (module docstring)."""
    cores = local_cores()
    if not hasattr(os, "getloadavg"):
        return cores
    return max(0, cores - round(os.getloadavg()[0]))


@dataclass(frozen=True)
class DaskRunner:
    """A `runner` for run_accuracy: on the scheduler at `scheduler` (an address such as
    tcp://host:8786) or on a local cluster of `workers` processes (default: one per core; never
    more than the samples, an idle worker costs its start-up and gains nothing)."""

    workers: int | None = None
    scheduler: str | None = None

    def __post_init__(self) -> None:
        """A local cluster of more processes than cores only competes with itself (40 workers made
        52 processes in 20 s on 2 cores): refused, as `quirobot accuracy --workers` refuses it."""
        if self.scheduler is None and self.workers is not None and not 1 <= self.workers <= local_cores():
            raise ValueError(
                f"a local Dask cluster takes 1 to {local_cores()} workers (the cores this process may "
                f"run on), got {self.workers}"
            )

    def __call__(self, setup: BudgetSetup, samples: int, progress: Callable[[int], None] | None) -> list:
        try:
            import dask
            from distributed import Client, LocalCluster, as_completed
        except ImportError as error:
            raise RuntimeError(
                "the Dask runner needs dask and distributed: pip install dask distributed"
            ) from error
        from quirobot_control.analysis.accuracy import run_indexed_sample

        cluster = None
        if self.scheduler is None:
            # The workers' statistical profiler samples every stack each 10 ms for a dashboard
            # this cluster does not have.
            with dask.config.set({"distributed.worker.profile.enabled": False}):
                cluster = LocalCluster(
                    n_workers=min(self.workers or local_cores(), samples),
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                )
        client = Client(self.scheduler if self.scheduler is not None else cluster)
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


def local_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
