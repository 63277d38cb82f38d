"""Accuracy budget benchmark: Monte-Carlo incisions on the realistic plant, and the plant's effect.

    python bench/accuracy.py [--samples N] [--jobs J] [--throughput-samples K] [--save [FILE]]

1. The CI incision (3 mm at 2 mm/s) on the ideal plant, and on the realistic plant with and
   without the compensation (dual-loop load-side wrist encoders): the targets from the true tip.
2. `quirobot accuracy`'s budget over N samples (default 200): p50/p95/max of the entry error,
   lateral deviation, axis angle error and depth error; target p95 lateral <= 0.2 mm. Too long
   for CI (a few seconds of wall time per sample), so it lives here; --jobs splits the samples
   over processes (each its own seed range: the figures differ from one process's by sampling).
3. Throughput of one sample, in samples per second per core: K samples in this process before
   the speed-up (the description expanded anew for each, as before the expansion cache) and
   after it, then 2K on `quirobot accuracy`'s default runner (a Dask local cluster, one process
   per core; its start-up counted). cProfile of one sample: about 70 % in the realistic plant's
   period (six simulated drives at 5 substeps each, pure Python), 10 % expanding the xacro twice.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

from bench_results import add_save_option, saved_output

from quirobot_control.analysis.accuracy import (
    METRICS,
    AccuracyResult,
    budget_setup,
    run_accuracy,
    run_indexed_sample,
)
from quirobot_control.analysis.accuracy_cluster import dask_runner, local_cores
from quirobot_control.simulation.incision import TARGETS, run_task
from quirobot_description.export import export_urdf
from quirobot_description.parameters import load_parameters
from quirobot_description.urdf import clear_expansion_cache, robot_description

P95_LATERAL_TARGET = 0.2e-3  # m, the budget target


def _chunk(args: tuple[int, int]) -> AccuracyResult:
    samples, seed = args
    return run_accuracy(load_parameters(), samples, seed=seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200, help="Monte-Carlo samples (default 200)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument(
        "--throughput-samples", type=int, default=4, help="samples per throughput timing (default 4)"
    )
    parser.add_argument("--throughput-only", action="store_true", help="section 3 only")
    add_save_option(parser, "accuracy.txt")
    args = parser.parse_args()
    with saved_output(args.save):
        _run(args)


def _run(args: argparse.Namespace) -> None:
    if not args.throughput_only:
        _budget(args)
    _throughput(args.throughput_samples)


def _throughput(count: int) -> None:
    params = load_parameters()
    setup = budget_setup(params, seed=0)
    run_indexed_sample(setup, 0)  # imports and first-call costs out of the timings
    print(f"\n3. throughput of one sample ({count} samples each; samples per second per core)")
    for label, cold in (("cold", True), ("cached", False)):
        if cold:
            clear_expansion_cache()
        start = time.perf_counter()
        robot_description("drill", "mock")
        export_urdf(tempfile.mkdtemp(), tool="drill")
        print(f"   the two expansions of a sample, {label:<30}{time.perf_counter() - start:8.3f} s")
    rates = {}
    for label, cold in (
        ("before: description expanded per sample", True),
        ("after: expansion cached", False),
    ):
        times = []
        for k in range(1, count + 1):
            if cold:
                clear_expansion_cache()
            start = time.perf_counter()
            run_indexed_sample(setup, k)
            times.append(time.perf_counter() - start)
        rates[label] = 1.0 / min(times)  # the least disturbed sample: the machine is shared
        print(
            f"   {label:<48}{rates[label]:8.3f}  (best {min(times):.2f} s, mean "
            f"{sum(times) / count:.2f} s per sample, 1 core)"
        )
    before, after = rates.values()
    print(f"   speed-up of one sample: x{after / before:.2f} (aim x3)")
    cores = local_cores()
    start = time.perf_counter()
    run_accuracy(params, 2 * count, seed=0, runner=dask_runner())
    elapsed = time.perf_counter() - start
    print(
        f"   {f'Dask local cluster, {cores} processes (start-up counted)':<48}"
        f"{2 * count / elapsed / cores:8.3f}  ({2 * count / elapsed:.3f} samples/s in all)"
    )


def _budget(args: argparse.Namespace) -> None:
    params = load_parameters()
    print("1. the CI incision (3 mm at 2 mm/s), metrics from the plant's true tip (um)")
    keys = ("entry_error", "lateral_deviation", "depth_overshoot", "final_depth_error")
    print(f"   {'plant':<28}" + "".join(f"{key:>20}" for key in keys))
    for label, plant, compensated in (
        ("ideal", "ideal", True),
        ("realistic, compensated", "realistic", True),
        ("realistic, no compensation", "realistic", False),
    ):
        m = run_task(
            "incision", params, depth=0.003, feed_rate=0.002, plant=plant, compensated=compensated
        ).metrics.as_dict()
        cells = "".join(
            f"{m[key] * 1e6:14.2f} {'ok' if m[key] <= TARGETS[key] else 'MISS':>5}" for key in keys
        )
        print(f"   {label:<28}{cells}")

    print(
        f"\n2. accuracy budget: {args.samples} Monte-Carlo incisions, realistic plant, {args.jobs} processes"
    )
    start = time.perf_counter()
    jobs = max(1, min(args.jobs, args.samples))
    shares = [args.samples // jobs + (1 if k < args.samples % jobs else 0) for k in range(jobs)]
    with ProcessPoolExecutor(jobs) as pool:
        parts = list(pool.map(_chunk, [(n, 1000 + k) for k, n in enumerate(shares)]))
    result = AccuracyResult(tuple(sample for part in parts for sample in part.samples))
    stats = result.statistics()
    completed = sum(sample.completed for sample in result.samples)
    print(f"   {completed} of {len(result.samples)} completed, {time.perf_counter() - start:.0f} s wall")
    print(f"   {'metric':<20}{'p50':>10}{'p95':>10}{'max':>10}")
    for metric in METRICS:
        scale, unit = (1e3, "mrad") if metric == "axis_angle_error" else (1e6, "um")
        row = "".join(f"{stats[metric][k] * scale:10.2f}" for k in ("p50", "p95", "max"))
        print(f"   {metric:<20}{row}  {unit}")
    p95 = stats["lateral_deviation"]["p95"]
    verdict = "met" if p95 <= P95_LATERAL_TARGET else "MISSED"
    print(
        f"   p95 lateral deviation {p95 * 1e6:.1f} um, target <= {P95_LATERAL_TARGET * 1e6:.0f} um: {verdict}"
    )


if __name__ == "__main__":
    main()
