"""`quirobot simulate`: the closed-loop surgical simulation (the product's main job)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from quirobot_cli.verb_parser import add_verb
from quirobot_control.simulation.closed_loop import DEFAULT_PLANT, PLANTS

if TYPE_CHECKING:
    from quirobot_control.simulation.faults import BreakthroughReport

DEFAULT_OUTPUT = "quirobot_output"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_verb(
        subparsers,
        "simulate",
        help="run a surgical task in closed loop (planner, IK, PID, brushless drives, MuJoCo)",
        description=(
            "Plan a task, then run it in closed loop: inverse kinematics at every sample, one PID per "
            "joint commanding the simulated brushless drives, MuJoCo physics with the bone's drilling "
            "thrust. Prints a summary (or JSON), writes a PNG and an MCAP log (ROS 2 messages) into "
            "the output folder. Exit status 0 when the task completed within its precision targets, "
            "1 when it stopped early or missed one (timing is reported, not enforced). With --inject, or "
            "when the far-cortex breakthrough ended the feed: 0 when the robot ended safe (at rest, the "
            "bit no more than 0.05 mm deeper after the fault, no more than 0.5 mm past the far cortex, "
            "not past the planned depth), 1 otherwise."
        ),
    )
    parser.add_argument(
        "--task",
        default="incision",
        help="incision (drill the tibia, config/tasks/incision.yaml), line (the report's straight line) "
        "or a path to a task YAML file (default: incision)",
    )
    parser.add_argument(
        "--output",
        default=DEFAULT_OUTPUT,
        help=f"output folder, created if missing; its parent must exist (default: ./{DEFAULT_OUTPUT})",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of a table")
    parser.add_argument(
        "--depth",
        type=float,
        help="incision depth below the entry point, m (overrides the task); past the far cortex, the "
        "breakthrough detector stops the feed (a plan whose breakthrough it would not see is refused)",
    )
    parser.add_argument("--feed-rate", type=float, help="incision feed rate, m/s (overrides the task)")
    parser.add_argument(
        "--max-thrust",
        type=float,
        help="the drilling monitor's thrust limit, N, as a DrillHole goal's max_thrust: the feed stops "
        "above it (default and at most the robot's, tools.drill.thrust_limit)",
    )
    parser.add_argument(
        "--plant",
        choices=PLANTS,
        default=DEFAULT_PLANT,
        help="realistic (default): gearbox stiffness and backlash, friction, delay, encoder noise, ram "
        "and bit bending, skiving, chatter (parameter file realistic_plant); ideal: MuJoCo's rigid "
        "bodies, the controller's own model",
    )
    parser.add_argument(
        "--no-compensation",
        action="store_true",
        help="realistic plant only: the wrist's position loop on the motor encoders (no load-side encoders)",
    )
    parser.add_argument(
        "--inject",
        metavar="KIND@SECONDS",
        action="append",
        help="inject a fault at that simulation time (repeat for several: each applies at its time): "
        "master-loss (the host stops; the drives' watchdog "
        "must stop them), drive-fault (a fault the feed's drive still controls: its quick-stop ramp; "
        "drive-fault:JOINT for another drive), power-fault[:JOINT] (a power-stage fault: torque off and "
        "brake at once), estop (the "
        "host's quick stop), bone-harder (3x thrust from then: the thrust limit must stop the feed), "
        "spindle-stall (a jammed bit: the spindle's stall must stop the feed); a time after the run's "
        'end is refused; the JSON gets "faults" (s and m; "fault": the first)',
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.set_defaults(handler=simulate)


def _finite_positive(value: float | None, name: str) -> None:
    if value is not None and (not math.isfinite(value) or value <= 0.0):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")


def simulate(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from quirobot_cli.output_paths import output_file, output_folder
    from quirobot_control.planning.tasks import IncisionTask, load_task
    from quirobot_control.reporting.plots import plot_result
    from quirobot_control.reporting.recording import write_mcap
    from quirobot_control.simulation.faults import Injection
    from quirobot_control.simulation.incision import run_task, targets_met
    from quirobot_description.parameters import load_parameters

    if args.no_compensation and args.plant != "realistic":
        raise ValueError("--no-compensation applies to --plant realistic only")
    _finite_positive(args.depth, "--depth")
    _finite_positive(args.feed_rate, "--feed-rate")
    _finite_positive(args.max_thrust, "--max-thrust")
    injections = [Injection.parse(text) for text in args.inject or ()]
    task = load_task(args.task)
    if not isinstance(task, IncisionTask) and (
        args.depth is not None or args.feed_rate is not None or args.max_thrust is not None or injections
    ):
        raise ValueError("--depth, --feed-rate, --max-thrust and --inject apply to an incision task only")
    # Checked before the run: a path that cannot be written fails now, not after the simulation.
    output = output_folder(args.output)
    stem = task.path.stem
    log_file, plot_file = output_file(output / f"{stem}.mcap"), output_file(output / f"{stem}.png")
    params = load_parameters()
    robot_limit = params.drilling.safety.thrust_limit
    if args.max_thrust is not None and args.max_thrust > robot_limit:
        raise ValueError(
            f"--max-thrust {args.max_thrust:g} N exceeds the robot's thrust limit {robot_limit:g} N "
            "(tools.drill.thrust_limit)"
        )
    bar = None

    def on_plan(trajectory) -> None:
        nonlocal bar
        if not args.no_progress:
            bar = tqdm(
                total=len(trajectory.positions),
                unit="cycle",
                desc=f"simulate {task.path.stem}",
                file=sys.stderr,
            )

    def progress(done: int) -> None:
        if bar is not None:
            bar.update(done - bar.n)

    try:
        result = run_task(
            task,
            params,
            progress=progress,
            on_plan=on_plan,
            depth=args.depth,
            feed_rate=args.feed_rate,
            plant=args.plant,
            compensated=not args.no_compensation,
            injection=injections,
            max_thrust=args.max_thrust,
        )
    finally:
        if bar is not None:
            bar.update(bar.total - bar.n)
            bar.close()
    log_path = write_mcap(log_file, result.log, result.trajectory)
    plot_path = plot_result(result, plot_file)
    met = targets_met(result.metrics)
    if args.json:
        document: dict = {
            "metrics": {
                **result.metrics.as_dict(),
                "targets_met": met,
                "plant": args.plant,
                "compensated": args.plant == "realistic" and not args.no_compensation,
            },
            "log": str(log_path),
            "plot": str(plot_path),
        }
        if isinstance(result.task, IncisionTask):
            document = {
                "incision": {
                    "entry": result.task.entry.tolist(),
                    "direction": result.task.direction.tolist(),
                    "depth": result.task.depth,
                    "start_time": result.metrics.incision.feed_start_time,
                    "end_time": result.metrics.incision.feed_end_time,
                },
                **document,
            }
            if result.faults:
                faults = [fault.as_dict() for fault in result.faults]
                document["fault"], document["faults"] = faults[0], faults
            if result.breakthrough is not None:
                document["breakthrough"] = result.breakthrough.as_dict()
            document["metrics"]["unsafe"] = result.unsafe  # why the robot did not end safe (empty: it did)
        print(json.dumps(_finite_or_null(document), indent=2, default=str, allow_nan=False))
    else:
        detectable = (
            params.drilling.safety.breakthrough_drop * task.bone.point_length
            if isinstance(task, IncisionTask)
            else 0.0
        )
        _print_summary(result, met, log_path, plot_path, detectable)
    return exit_status(result, injected=bool(injections))


def exit_status(result, *, injected: bool) -> int:
    """0 or 1 (see the verb's description): a fault injected or a feed ended by the breakthrough:
    did the robot end safe; otherwise also completed within the precision targets (timing, which
    depends on the machine, is reported, not enforced)."""
    from quirobot_control.simulation.incision import TIMING_TARGETS, targets_met

    metrics = result.metrics
    precision_met = all(ok for key, ok in targets_met(metrics).items() if key not in TIMING_TARGETS)
    safe, completed = not result.unsafe, metrics.run.completed
    if injected:
        return 0 if safe else 1
    if metrics.incision is not None and metrics.incision.feed_end == "breakthrough":
        return 0 if safe and completed else 1  # the bone ended the feed: the plan's depth is moot
    return 0 if safe and completed and precision_met else 1


def _finite_or_null(value: object) -> object:
    """The document with NaN/inf numbers as null (strict JSON has no NaN)."""
    if isinstance(value, dict):
        return {key: _finite_or_null(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_null(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _print_summary(
    result, met: dict[str, bool], log_path: Path, plot_path: Path, detectable_overshoot: float = 0.0
) -> None:
    """The run's table; `detectable_overshoot` (m): how far past the far cortex the tip must go
    before the thrust has dropped enough for the breakthrough detector (its drop x the drill's
    point length)."""
    from quirobot_control.simulation.incision import TIMING_TARGETS

    m = result.metrics.as_dict()  # the table looks its rows up by name
    rows: list[tuple[str, str, str]] = []

    def row(label: str, key: str, scale: float, unit: str) -> None:
        if m.get(key) is not None:
            # Timing measures this machine, not the robot: a value, no verdict the user could act on.
            target = None if key in TIMING_TARGETS else met.get(key)
            verdict = "" if target is None else ("ok" if target else "MISSED")
            rows.append((label, f"{m[key] * scale:.3f} {unit}", verdict))

    row("entry-point error", "entry_error", 1e6, "um")
    row("lateral deviation (feed)", "lateral_deviation", 1e6, "um")
    row("depth overshoot", "depth_overshoot", 1e6, "um")
    row("final depth error", "final_depth_error", 1e6, "um")
    row("peak bone thrust", "peak_thrust", 1.0, "N")
    row("distance from the line", "line_deviation", 1e6, "um")
    row("final position error", "line_final_error", 1e6, "um")
    row("simulated duration", "duration", 1.0, "s")
    row("wall time", "wall_time", 1.0, "s")
    row("real-time factor (this machine)", "real_time_factor", 1.0, "x")
    row("controller p99 per cycle (this machine)", "controller_p99", 1e6, "us")
    run, incision = result.metrics.run, result.metrics.incision
    for name, value in run.peak_current.items():
        rows.append((f"peak current {name}", f"{value:.3f} A", ""))
    width = max(len(r[0]) for r in rows)
    print(f"quirobot simulate: {result.task.path.stem}")
    for label, value, verdict in rows:
        print(f"  {label:<{width}}  {value:>14}  {verdict}")
    if run.stop_reason:
        print(f"  STOPPED: {run.stop_reason}")
    if incision is not None and incision.feed_end == "breakthrough":
        print(f"  FEED ENDED: {incision.drilling_stop}")
    breakthrough = getattr(result, "breakthrough", None)
    for fault in getattr(result, "faults", []):
        numbers = fault.not_applied or ", ".join(
            f"{key} {value * (1e3 if key.endswith('_after') else 1e6):.1f} "
            f"{'ms' if key.endswith('_after') else 'um'}"
            for key, value in fault.as_dict().items()
            if key not in ("kind", "at", "not_applied") and value is not None
        )
        print(f"  FAULT {fault.kind} at {fault.at} s: {numbers}")
    if breakthrough is not None:
        print(f"  {breakthrough_line(breakthrough, detectable_overshoot)}")
    for reason in getattr(result, "unsafe", []):
        print(f"  UNSAFE: {reason}")
    print(f"  log:  {log_path}")
    print(f"  plot: {plot_path}")


def breakthrough_line(breakthrough: BreakthroughReport, detectable_overshoot: float) -> str:
    """The summary's far-cortex line: detected, nothing to detect (the tip stopped less than
    `detectable_overshoot` m past the exit, before the thrust could drop), or NOT DETECTED."""
    exit_mm, past_mm = breakthrough.exit_depth * 1e3, breakthrough.overshoot * 1e3
    detected = breakthrough.detected_depth
    if detected is not None:
        return (
            f"far cortex exit at {exit_mm:.2f} mm, breakthrough detected at {detected * 1e3:.2f} mm, "
            f"tip {past_mm:.3f} mm past the exit"
        )
    if breakthrough.overshoot < detectable_overshoot:
        return (
            f"far cortex exit at {exit_mm:.2f} mm, tip {past_mm:.3f} mm past it: no breakthrough to detect "
            f"(the thrust drops enough {detectable_overshoot * 1e3:.2f} mm past the exit)"
        )
    return f"far cortex exit at {exit_mm:.2f} mm, tip {past_mm:.3f} mm past it: breakthrough NOT DETECTED"
