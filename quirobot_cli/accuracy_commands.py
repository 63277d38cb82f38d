"""`quirobot accuracy`: the accuracy budget (quirobot_control.analysis.accuracy) on the command line."""

from __future__ import annotations

import argparse
import json
import math
import sys

from quirobot_cli.verb_parser import add_verb
from quirobot_control.analysis.accuracy_cluster import (
    DASK_MIN_SAMPLES,
    DaskRunner,
    cluster_pays,
    idle_cores,
    local_cores,
)

DEFAULT_PLOT = "quirobot_output/accuracy.png"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_verb(
        subparsers,
        "accuracy",
        help="accuracy budget: Monte-Carlo incisions on the realistic plant (p50/p95/max errors)",
        description=(
            "Run N short incisions (3 mm at 2 mm/s from the standoff) in closed loop on the realistic "
            "plant, each with its plant drawn from the parameter file's distributions and its entry point "
            "and axis drawn over the workspace, and print p50/p95/max of the entry error, lateral "
            "deviation, axis angle error and depth error (from the plant's true tip), with a histogram "
            f"plot. From {DASK_MIN_SAMPLES} samples with 2 idle cores or more (the cores less the load "
            "average) the samples run on a local Dask cluster, one process per idle core (a sample takes "
            "about 4.5 s, the cluster's start-up about 1.5 s; a worker on a busy core gains nothing), "
            "else in this process; --workers N or --scheduler ADDRESS always run them on Dask, --serial "
            "in this process; the same numbers for a seed whatever the path. "
            "Each sample also goes through the system stages (a machine drawn from the geometric "
            "error distributions: uncalibrated, laser-calibrated, registered with 4 fiducials and an "
            "optical tracker). --json: {samples, entry_error, lateral_deviation, axis_angle_error, "
            "depth_error: {p50, p95, max}, system: {uncalibrated, calibrated, registered: {entry_error, "
            "axis_angle_error: {p50, p95, max}}}, tre_predicted, tre_monte_carlo: {p50, p95}} in m and rad."
        ),
    )
    parser.add_argument("--samples", type=int, default=20, help="Monte-Carlo samples, 1-1000 (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--plot",
        default=DEFAULT_PLOT,
        help=f"histogram PNG, its folder created if missing (default {DEFAULT_PLOT})",
    )
    parser.add_argument(
        "--workers",
        type=int,
        help="run the samples on a local Dask cluster of this many processes, at most the cores this "
        f"process may run on (default: one per idle core from {DASK_MIN_SAMPLES} samples and 2 idle cores, "
        "else in this process; 0: in this process, as --serial)",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the samples on an existing Dask scheduler (tcp://host:8786)",
    )
    parser.add_argument(
        "--serial", action="store_true", help="run the samples in this process, no Dask cluster"
    )
    parser.add_argument(
        "--no-progress", action="store_true", help="no progress bar on stderr (none when not a TTY)"
    )
    parser.set_defaults(handler=accuracy)


def accuracy(args: argparse.Namespace) -> int:
    from pathlib import Path

    from quirobot_cli.output_paths import output_file, output_folder
    from quirobot_control.analysis.accuracy import METRICS, check_samples, plot_accuracy, run_accuracy
    from quirobot_description.parameters import load_parameters

    check_samples(args.samples)
    runner, where = _runner_and_reason(args)
    plot = Path(args.plot)
    output_folder(plot.parent)
    plot = output_file(plot, ".png")
    params = load_parameters()
    bar = None
    if not args.no_progress and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=args.samples, unit="incision", desc="accuracy", file=sys.stderr)
    try:
        result = run_accuracy(
            params,
            args.samples,
            seed=args.seed,
            progress=(lambda done: bar.update(done - bar.n)) if bar else None,
            runner=runner,
        )
    finally:
        if bar is not None:
            bar.close()
    plot_accuracy(result, plot)
    document = result.as_json()
    if args.json:
        print(json.dumps({**document, "plot": str(plot), "samples_ran": where}, indent=2))
        return 0
    print(
        f"quirobot accuracy: {document['samples']} incisions on the realistic plant "
        f"({document['completed']} completed)"
    )
    print(f"  samples ran {where}")
    print(f"  {'metric':<20} {'p50':>10} {'p95':>10} {'max':>10}")
    for metric in METRICS:
        scale, unit = (1e3, "mrad") if metric == "axis_angle_error" else (1e6, "um")
        row = " ".join(
            f"{'-' if document[metric][k] is None else f'{document[metric][k] * scale:.1f}':>10}"
            for k in ("p50", "p95", "max")
        )
        print(f"  {metric:<20} {row}  {unit}")
    for stage, metrics in document["system"].items():
        entry, axis = metrics["entry_error"], metrics["axis_angle_error"]
        print(
            f"  system, {stage:<12} entry p50/p95 {entry['p50'] * 1e3:.3f}/{entry['p95'] * 1e3:.3f} mm, "
            f"axis p95 {math.degrees(axis['p95']):.3f} deg"
        )
    print(f"  plot: {plot}")
    return 0


def _runner(args: argparse.Namespace):
    """Where the samples run: None (in this process) with --serial or --workers 0, or by default
    when a local cluster does not pay (accuracy_cluster.cluster_pays: too few samples or fewer
    than 2 idle cores); else a Dask runner on --scheduler or a local cluster of --workers
    processes (default one per idle core)."""
    return _runner_and_reason(args)[0]


def _runner_and_reason(args: argparse.Namespace):
    """(`_runner`'s runner, where the samples run and why: the words after "samples ran")."""
    cores = local_cores()
    if args.workers is not None and not 0 <= args.workers <= cores:
        raise ValueError(
            f"--workers must be from 0 (in this process) to {cores} (the cores this process may run on), "
            f"got {args.workers}"
        )
    serial = args.serial or args.workers == 0
    if serial and args.scheduler is not None:
        raise ValueError("--scheduler runs the samples on Dask: drop --serial / --workers 0")
    if serial:
        return None, "in this process (asked: --serial or --workers 0)"
    if args.scheduler is not None:
        return DaskRunner(args.workers, args.scheduler), f"on the Dask scheduler at {args.scheduler} (asked)"
    if args.workers is not None:
        return DaskRunner(
            args.workers
        ), f"on a local Dask cluster of {args.workers} processes (asked: --workers)"
    idle = idle_cores()
    rule = (
        f"a local Dask cluster pays with 2 idle cores or more and {DASK_MIN_SAMPLES} samples or more "
        f"(its start-up against the samples' time); here {idle} idle of {cores} cores "
        "(the cores less the load average), "
        f"{args.samples} sample{'s' if args.samples != 1 else ''}"
    )
    if not cluster_pays(args.samples, idle):
        return None, f"in this process: {rule}"
    return DaskRunner(idle), f"on a local Dask cluster of {idle} processes, one per idle core: {rule}"
