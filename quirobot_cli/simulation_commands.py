"""`quirobot simulate`: the closed-loop surgical simulation (the product's main job)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from quirobot_cli.verb_parser import add_verb
from quirobot_description.plant_parameters import DEFAULT_PLANT, PLANTS
from quirobot_description.shown_numbers import compared

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
        help="incision (drill the tibia, config/tasks/incision.yaml), line (the report's straight line), "
        "arthroscopy (hold the scope through a portal under scripted servo commands), pin (insert a "
        "Schanz pin), a procedure registered since (procedures.procedure) or a path to a task YAML "
        "file (default: incision)",
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
    parser.add_argument(
        "--bone-factor",
        type=float,
        help="pin task only: the bone's insertion torque times this (a harder bone than planned: > 1)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.set_defaults(handler=simulate)


def _finite_positive(value: float | None, name: str) -> None:
    if value is not None and (not math.isfinite(value) or value <= 0.0):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")


def simulate(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from quirobot_cli.output_paths import output_file, output_folder
    from quirobot_control.procedures.procedure import procedure_for, task_kind
    from quirobot_control.reporting.plots import plot_result
    from quirobot_control.reporting.recording import write_mcap
    from quirobot_control.simulation.faults import Injection
    from quirobot_control.simulation.incision import targets_met
    from quirobot_description.parameters import load_parameters

    if args.no_compensation and args.plant != "realistic":
        raise ValueError("--no-compensation applies to --plant realistic only")
    _finite_positive(args.depth, "--depth")
    _finite_positive(args.feed_rate, "--feed-rate")
    _finite_positive(args.max_thrust, "--max-thrust")
    _finite_positive(args.bone_factor, "--bone-factor")
    injections = [Injection.parse(text) for text in args.inject or ()]
    kind, path = task_kind(args.task)
    procedure = procedure_for(kind)
    task = procedure.load(path)
    given = {
        "depth": args.depth is not None,
        "feed_rate": args.feed_rate is not None,
        "max_thrust": args.max_thrust is not None,
        "inject": bool(injections),
        "bone_factor": args.bone_factor is not None,
    }
    refused = [name for name, used in given.items() if used and name not in procedure.options]
    if refused:
        raise ValueError(_refused_options(refused))
    # Checked before the run: a path that cannot be written fails now, not after the simulation.
    output = output_folder(args.output)
    stem = task.path.stem
    log_file, plot_file = output_file(output / f"{stem}.mcap"), output_file(output / f"{stem}.png")
    params = load_parameters()
    robot_limit = params.drilling.safety.thrust_limit
    if args.max_thrust is not None and args.max_thrust > robot_limit:
        given, limit = compared(args.max_thrust, robot_limit)
        raise ValueError(
            f"--max-thrust {given} N exceeds the robot's thrust limit {limit} N (tools.drill.thrust_limit)"
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
            bar.update(min(done, bar.total) - bar.n)

    try:
        options = {"progress": progress, "on_plan": on_plan, "plant": args.plant}
        options["compensated"] = not args.no_compensation
        if "depth" in procedure.options:
            options.update(depth=args.depth, feed_rate=args.feed_rate)
        if "inject" in procedure.options:
            options["injection"] = injections
        if "max_thrust" in procedure.options:
            options["max_thrust"] = args.max_thrust
        if "bone_factor" in procedure.options:
            options["bone_factor"] = args.bone_factor
        result = procedure.simulate(task, params, **options)
    finally:
        if bar is not None:
            bar.update(bar.total - bar.n)
            bar.close()
    # A procedure without arm motion (pin: the spindle and the feed) has no joint log to write.
    log_path = None if result.log is None else write_mcap(log_file, result.log, result.trajectory)
    plot_path = None if result.log is None else plot_result(result, plot_file, procedure.panels)
    met = targets_met(result.metrics, procedure.targets)
    if args.json:
        document: dict = {
            "metrics": {
                **result.metrics.as_dict(),
                "targets_met": met,
                "plant": args.plant,
                "compensated": args.plant == "realistic" and not args.no_compensation,
            },
            "log": None if log_path is None else str(log_path),
            "plot": None if plot_path is None else str(plot_path),
        }
        document = procedure.document(result, document)
        print(json.dumps(_finite_or_null(document), indent=2, default=str, allow_nan=False))
    else:
        detectable = (
            params.drilling.safety.breakthrough_drop * task.bone.point_length if kind == "incision" else 0.0
        )
        _print_summary(result, met, log_path, plot_path, detectable, procedure.summary_rows)
    return exit_status(result, injected=bool(injections), targets=procedure.targets)


def exit_status(result, *, injected: bool, targets=None) -> int:
    """0 or 1 (see the verb's description): a fault injected or a feed ended by the breakthrough:
    did the robot end safe; otherwise also completed within the precision targets (timing, which
    depends on the machine, is reported, not enforced)."""
    from quirobot_control.simulation.incision import TIMING_TARGETS, targets_met

    metrics = result.metrics
    met = targets_met(metrics, targets)
    precision_met = all(ok for key, ok in met.items() if key not in TIMING_TARGETS)
    safe, completed = not result.unsafe, metrics.run.completed
    if injected:
        return 0 if safe else 1
    if metrics.incision is not None and metrics.incision.feed_end == "breakthrough":
        return 0 if safe and completed else 1  # the bone ended the feed: the plan's depth is moot
    return 0 if safe and completed and precision_met else 1


def _refused_options(refused: list[str]) -> str:
    """The one-line refusal of task options the chosen procedure does not take, naming those that do."""
    from quirobot_control.procedures.procedure import procedure_for, procedure_names

    takers = [name for name in procedure_names() if set(refused) <= procedure_for(name).options]
    flags = ", ".join(f"--{name.replace('_', '-')}" for name in refused)
    tasks = " or ".join(("an " if name[0] in "aeiou" else "a ") + name for name in takers) or "no"
    return f"{flags} apply to {tasks} task only"


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
    result,
    met: dict[str, bool],
    log_path: Path,
    plot_path: Path,
    detectable_overshoot: float = 0.0,
    procedure_rows: tuple | None = None,
) -> None:
    """The run's table: the procedure's rows (procedures.procedure.SummaryRow), then the rows every
    run has; `detectable_overshoot` (m): how far past the far cortex the tip must go before the
    thrust has dropped enough for the breakthrough detector (its drop x the drill's point length)."""
    from quirobot_control.simulation.incision import TIMING_TARGETS

    m = result.metrics.as_dict()  # the table looks its rows up by name
    rows: list[tuple[str, str, str]] = []

    def row(label: str, key: str, scale: float, unit: str) -> None:
        if m.get(key) is not None:
            # Timing measures this machine, not the robot: a value, no verdict the user could act on.
            target = None if key in TIMING_TARGETS else met.get(key)
            verdict = "" if target is None else ("ok" if target else "MISSED")
            rows.append((label, f"{m[key] * scale:.3f} {unit}", verdict))

    if procedure_rows is None:  # the drilled incision's and the line's rows
        from quirobot_control.procedures.procedure import procedure_for

        procedure_rows = procedure_for("incision").summary_rows + procedure_for("line").summary_rows
    for item in procedure_rows:
        row(item.label, item.key, item.scale, item.unit)
    row("simulated duration", "duration", 1.0, "s")
    row("wall time", "wall_time", 1.0, "s")
    row("real-time factor (this machine)", "real_time_factor", 1.0, "x")
    row("controller p99 per cycle (this machine)", "controller_p99", 1e6, "us")
    run, incision = result.metrics.run, getattr(result.metrics, "incision", None)
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
