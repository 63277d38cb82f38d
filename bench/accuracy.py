"""Accuracy budget benchmark: Monte-Carlo incisions on the realistic plant, and the plant's effect.

    python bench/accuracy.py [--samples N] [--jobs J] [--save [FILE]]

1. The CI incision (3 mm at 2 mm/s) on the ideal plant, and on the realistic plant with and
   without the compensation (dual-loop load-side wrist encoders): the targets from the true tip.
2. `quirobot accuracy`'s budget over N samples (default 200): p50/p95/max of the entry error,
   lateral deviation, axis angle error and depth error; target p95 lateral <= 0.2 mm. Too long
   for CI (a few seconds of wall time per sample), so it lives here; --jobs splits the samples
   over processes (each its own seed range: the figures differ from one process's by sampling).
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

from bench_results import add_save_option, saved_output

from quirobot_control.analysis.accuracy import METRICS, AccuracyResult, run_accuracy
from quirobot_control.simulation.incision import TARGETS, run_task
from quirobot_description.parameters import load_parameters

P95_LATERAL_TARGET = 0.2e-3  # m, the budget target


def _chunk(args: tuple[int, int]) -> AccuracyResult:
    samples, seed = args
    return run_accuracy(load_parameters(), samples, seed=seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200, help="Monte-Carlo samples (default 200)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    add_save_option(parser, "accuracy.txt")
    args = parser.parse_args()
    with saved_output(args.save):
        _run(args)


def _run(args: argparse.Namespace) -> None:
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
