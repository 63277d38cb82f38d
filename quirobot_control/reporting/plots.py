"""PNG summary of a closed-loop run, for the engineer who checks it: the whole run on one time axis.

Every panel shares the time axis of the whole run (retract, withdraw and park included), with the
plan's phases shaded and named on top. The planned value is drawn as a wide grey band under the
measured thin line, so it stays visible where they coincide; the window each precision metric
covers is shaded green on its panel. Lengths are in µm and angles in µrad, on separate panels;
legends sit outside the axes, never over a curve. Over a long run, joint signals are drawn as
translucent min-to-max bands so that no joint hides another.

Which task panels a run gets is the procedure's to say (`Procedure.panels`, names of PANELS): the
figure never asks what type the task is. Every run gets the tracking and current panels below them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from quirobot_control.planning.trajectory import JointTrajectory
from quirobot_control.simulation.incision import TARGETS, TaskResult
from quirobot_description.joint_names import REVOLUTE_JOINTS

PLANNED = {"color": "0.72", "lw": 5.0, "solid_capstyle": "butt"}  # wide grey band under the actual
ACTUAL = {"color": "tab:red", "lw": 0.9}
WINDOW = {"color": "tab:green", "alpha": 0.12}
ANGULAR = REVOLUTE_JOINTS  # joints whose error is an angle (µrad)
#: One colour per joint in every panel.
JOINT_COLOURS = {
    "gantry_x": "tab:blue",
    "gantry_y": "tab:orange",
    "gantry_z": "tab:green",
    "wrist_yaw": "tab:purple",
    "wrist_pitch": "tab:olive",
    "drill_feed": "tab:brown",
}


def plot_result(result: TaskResult, path: str | Path, panels: Sequence[str] = ()) -> Path:
    """Write the figure to `path` (.png, its folder must exist) and return it; `panels`: the
    procedure's task panels (names of PANELS), above the tracking and current panels."""
    import matplotlib.pyplot as plt

    figure = result_figure(result, panels)
    path = Path(path)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def result_figure(result: TaskResult, panels: Sequence[str] = ()):
    """The matplotlib Figure of a run (Agg backend; close it with pyplot.close); `panels` as in
    plot_result (ValueError naming the known ones for an unknown name)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    unknown = [name for name in panels if name not in PANELS]
    if unknown:
        raise ValueError(f"unknown plot panel {unknown[0]!r}: give one of {', '.join(PANELS)}")
    task = result.task
    rows = len(panels) + 3  # the task's panels, then tracking (2) and currents
    fig, axes = plt.subplots(
        rows,
        1,
        figsize=(13, 2.6 * rows + 1.4),
        sharex=True,
        constrained_layout=True,
        height_ratios=[1.4, 1.2] + [1.0] * (rows - 2),
    )
    for ax, name in zip(axes, panels, strict=False):
        PANELS[name](ax, result)
    _tracking_panels(axes[-3], axes[-2], result)
    _current_panel(axes[-1], result)
    for ax in axes:
        _shade_phases(ax, result.trajectory)
        ax.grid(alpha=0.3)
        ax.set_xlim(0.0, float(result.log.time[-1]))
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0), borderaxespad=0.0)
    _name_phases(axes[0], result.trajectory)
    axes[-1].set_xlabel("time (s), the whole run")
    fig.suptitle(
        f"QUIROBOT closed-loop simulation: {task.path.stem}\n{_summary(result)}", fontsize=12, linespacing=1.6
    )
    return fig


def _summary(result: TaskResult) -> str:
    """The precision metrics against their targets, two per line."""
    m = result.metrics.as_dict()  # looked up by name against TARGETS
    names = {
        "entry_error": "entry-point error",
        "lateral_deviation": "lateral deviation",
        "depth_overshoot": "depth overshoot",
        "final_depth_error": "final depth error",
        "line_deviation": "distance from the line",
    }
    parts = [
        f"{label} {m[key] * 1e6:.2f} µm (target ≤ {TARGETS[key] * 1e6:g})"
        for key, label in names.items()
        if m.get(key) is not None
    ]
    if result.metrics.run.stop_reason:
        parts.append(f"STOPPED: {result.metrics.run.stop_reason}")
    return "\n".join(";  ".join(parts[i : i + 2]) for i in range(0, len(parts), 2))


def _shade_phases(ax, trajectory: JointTrajectory) -> None:
    for index, phase in enumerate(trajectory.phases):
        if index % 2:
            ax.axvspan(phase.start_time, phase.end_time, color="0.5", alpha=0.07, lw=0)
        if index:
            ax.axvline(phase.start_time, color="0.5", lw=0.5, alpha=0.6)


def _name_phases(ax, trajectory: JointTrajectory) -> None:
    """The phase names on top of the first panel, at the middle of each phase."""
    top = ax.secondary_xaxis("top")
    top.set_xticks([(p.start_time + p.end_time) / 2 for p in trajectory.phases])
    top.set_xticklabels([p.name for p in trajectory.phases], rotation=60, ha="left", fontsize=8)
    top.tick_params(length=0)


def _window(ax, start: float, end: float, label: str) -> None:
    ax.axvspan(start, end, **WINDOW, label=label)


def _depth_panel(ax, result: TaskResult) -> None:
    log, task = result.log, result.task
    depth = (log.tip - task.entry) @ task.direction * 1e3
    planned = (log.planned_tip - task.entry) @ task.direction * 1e3
    ax.plot(log.time, planned, **PLANNED, label="planned")
    ax.plot(log.time, depth, **ACTUAL, label="actual drill tip")
    ax.axhline(0.0, color="tab:brown", lw=1, ls=":", label="bone surface (entry point)")
    ax.axhline(
        task.depth * 1e3, color="tab:green", lw=1, ls="--", label=f"target depth {task.depth * 1e3:g} mm"
    )
    low = -1.15 * task.approach_distance * 1e3
    ax.set_ylim(task.depth * 1e3 * 1.12, low)  # deeper is lower, as the bit goes
    ax.set_title(
        f"Drill tip depth along the drilling axis (the view ends {-low:.0f} mm up the axis; the park "
        "pose is further)",
        fontsize=10,
        loc="left",
    )
    ax.set_ylabel("depth (mm)")


def _tip_error_panel(ax, result: TaskResult) -> None:
    """The drill tip's distance from the drilling axis and its depth error, in µm, while on the axis."""
    log, task, trajectory, metrics = result.log, result.task, result.trajectory, result.metrics.incision
    u = task.direction
    offset = log.tip - task.entry
    planned_depth = (log.planned_tip - task.entry) @ u
    # On the axis from the end of the approach to the start of the park; elsewhere it is far off.
    on_axis = (log.time >= trajectory.phase("align").end_time) & (
        log.time <= trajectory.phase("withdraw").start_time
    )
    lateral = np.where(on_axis, np.linalg.norm(offset - (offset @ u)[:, None] * u, axis=1) * 1e6, np.nan)
    depth_error = np.where(on_axis, (offset @ u - planned_depth) * 1e6, np.nan)
    feed, dwell = trajectory.phase("feed"), trajectory.phase("dwell")
    _window(ax, feed.start_time, dwell.end_time, "lateral metric window (feed + dwell)")
    ax.plot(log.time, np.where(on_axis, 0.0, np.nan), **PLANNED, label="planned (on the axis, at depth)")
    ax.plot(log.time, lateral, **ACTUAL, label="distance from the drilling axis")
    ax.plot(log.time, depth_error, color="tab:purple", lw=0.7, label="depth − planned depth")
    ax.plot(
        [dwell.end_time],
        [metrics.final_depth_error * 1e6],
        "kv",
        ms=6,
        label="final depth error (end of the dwell)",
    )
    errors = np.abs(np.concatenate([lateral, depth_error]))  # all NaN when a stop came before the feed
    top = max(5.0, 1.3 * float(np.nanmax(errors))) if np.isfinite(errors).any() else 5.0
    targets = [TARGETS[key] * 1e6 for key in ("lateral_deviation", "final_depth_error")]
    shown = [target for target in targets if target < top]
    for target in sorted(set(shown)):
        ax.axhline(target, color="grey", lw=1, ls="-.", label=f"target ≤ {target:g} µm")
    hidden = "" if shown else f"; targets {' and '.join(f'{t:g}' for t in targets)} µm are above the view"
    ax.set_ylim(-top, top)
    ax.set_title(
        "Drill tip error from the plan, settle to withdraw: lateral max "
        f"{metrics.lateral_deviation * 1e6:.2f} µm in the window, overshoot "
        f"{metrics.depth_overshoot * 1e6:.2f} µm over the run{hidden}",
        fontsize=10,
        loc="left",
    )
    ax.set_ylabel("error (µm)")


def _thrust_panel(ax, result: TaskResult) -> None:
    ax.plot(result.log.time, result.log.thrust, color="tab:blue", lw=0.9, label="bone thrust on the bit")
    ax.set_title(f"Bone thrust: peak {result.metrics.incision.peak_thrust:.1f} N", fontsize=10, loc="left")
    ax.set_ylabel("thrust (N)")


def _line_geometry(result: TaskResult) -> tuple[np.ndarray, np.ndarray]:
    path = result.trajectory.paths[0]
    direction = (path.end - path.start) / np.linalg.norm(path.end - path.start)
    return path.start, direction


def _along_line_panel(ax, result: TaskResult) -> None:
    log = result.log
    start, direction = _line_geometry(result)
    ax.plot(log.time, (log.planned_tool0 - start) @ direction * 1e3, **PLANNED, label="planned")
    ax.plot(log.time, (log.tool0 - start) @ direction * 1e3, **ACTUAL, label="actual tool0")
    ax.set_title("tool0 along the straight line, from its start", fontsize=10, loc="left")
    ax.set_ylabel("distance (mm)")


def _line_deviation_panel(ax, result: TaskResult) -> None:
    log = result.log
    start, direction = _line_geometry(result)

    def deviation(points: np.ndarray) -> np.ndarray:
        offset = points - start
        return np.linalg.norm(offset - (offset @ direction)[:, None] * direction, axis=1) * 1e6

    line = result.trajectory.phase("line")
    _window(ax, line.start_time, line.end_time, "metric window (the line phase)")
    actual = deviation(log.tool0)
    ax.plot(log.time, deviation(log.planned_tool0), **PLANNED, label="planned (on the line)")
    ax.plot(log.time, actual, **ACTUAL, label="actual tool0")
    target = TARGETS["line_deviation"] * 1e6
    top = max(5.0, 1.4 * float(actual.max()))
    if top > target:
        ax.axhline(target, color="grey", lw=1, ls="-.", label=f"target ≤ {target:g} µm")
    hidden = "" if top > target else f" (target {target:g} µm is above the view)"
    ax.set_ylim(-0.04 * top, top)
    ax.set_title(
        f"tool0 distance from the line: max {result.metrics.line.line_deviation * 1e6:.2f} µm "
        f"in the window{hidden}",
        fontsize=10,
        loc="left",
    )
    ax.set_ylabel("distance (µm)")


#: The task panels a procedure may name (Procedure.panels), each drawing on one axes.
PANELS = {
    "depth": _depth_panel,
    "tip_error": _tip_error_panel,
    "thrust": _thrust_panel,
    "along_line": _along_line_panel,
    "line_deviation": _line_deviation_panel,
}


def _envelope(ax, t: np.ndarray, y: np.ndarray, colour: str | None, label: str, bins: int = 1500) -> None:
    """y(t) as its min-to-max band over `bins` slices of the run: at 1 kHz a line over 30 s is a
    solid block that hides the joints drawn before it; translucent bands show each one."""
    if len(t) < 4 * bins:  # short run: the line itself is readable
        ax.plot(t, y, color=colour, lw=0.8, label=label)
        return
    # np.array_split's slices (the first len % bins one sample longer), reduced all at once
    size, longer = divmod(len(t), bins)
    starts = np.arange(bins) * size + np.minimum(np.arange(bins), longer)
    counts = np.diff(np.append(starts, len(t)))
    middle = np.add.reduceat(t, starts) / counts
    low, high = np.minimum.reduceat(y, starts), np.maximum.reduceat(y, starts)
    ax.fill_between(middle, low, high, color=colour, alpha=0.45, lw=0.4, label=label)


def _tracking_panels(linear_ax, angular_ax, result: TaskResult) -> None:
    log = result.log
    error = (log.position - log.reference) * 1e6
    for j, name in enumerate(log.names):
        ax = angular_ax if name in ANGULAR else linear_ax
        _envelope(ax, log.time, error[:, j], JOINT_COLOURS.get(name), name)
    linear_ax.set_title(
        "Joint tracking error (true position − plan), prismatic axes and drill feed",
        fontsize=10,
        loc="left",
    )
    linear_ax.set_ylabel("error (µm)")
    angular_ax.set_title("Joint tracking error (true position − plan), wrist", fontsize=10, loc="left")
    angular_ax.set_ylabel("error (µrad)")


def _current_panel(ax, result: TaskResult) -> None:
    log = result.log
    for j, name in enumerate(log.names):
        _envelope(ax, log.time, log.current[:, j], JOINT_COLOURS.get(name), name)
    ax.set_title("Motor current commands", fontsize=10, loc="left")
    ax.set_ylabel("current (A)")
