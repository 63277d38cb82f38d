"""PNG summary of a closed-loop run: tracking errors, planned vs actual tip path, currents."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from quirobot_control.incision import TARGETS, TaskResult
from quirobot_control.tasks import IncisionTask


def plot_result(result: TaskResult, path: str | Path) -> Path:
    """Write the figure to `path` (.png) and return it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    log, task, metrics = result.log, result.task, result.metrics
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(2, 2, figsize=(14, 9), constrained_layout=True)
    t = log.time

    ax = axes[0, 0]
    error = log.position - log.reference
    for j, name in enumerate(log.names):
        unit = "µrad" if name.startswith("wrist") else "µm"
        ax.plot(t, error[:, j] * 1e6, lw=0.8, label=f"{name} ({unit})")
    ax.set_title("Joint tracking error (true position − plan)")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("error (µm or µrad)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=2)

    ax = axes[0, 1]
    ax.plot(t, log.current, lw=0.8)
    ax.set_title("Motor current commands (A)")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("current (A)")
    ax.grid(alpha=0.3)
    ax.legend(log.names, fontsize=8, ncol=2)

    if isinstance(task, IncisionTask):
        feed = result.trajectory.phase("feed")
        dwell = result.trajectory.phase("dwell")
        window = (t >= feed.start_time) & (t <= dwell.end_time)
        u = task.direction
        actual = log.tip[window] - task.entry
        planned = log.planned_tip[window] - task.entry
        depth, planned_depth = actual @ u, planned @ u
        lateral = np.linalg.norm(actual - depth[:, None] * u, axis=1)
        ax = axes[1, 0]
        ax.plot(
            planned_depth * 1e3,
            np.zeros_like(planned_depth),
            "k--",
            lw=1.5,
            label="planned (the drilling axis)",
        )
        ax.plot(depth * 1e3, lateral * 1e6, color="tab:red", lw=0.6, label="actual drill tip")
        ax.axvline(0.0, color="tab:brown", lw=1, ls=":", label="bone surface (entry)")
        ax.axvline(task.depth * 1e3, color="tab:green", lw=1, ls=":", label="target depth")
        lateral_target = TARGETS["lateral_deviation"] * 1e6  # µm
        top = max(5.0, float(lateral.max()) * 1.5e6)
        if top > lateral_target:
            ax.axhline(lateral_target, color="grey", lw=1, ls="-.", label=f"target: {lateral_target:g} µm")
        ax.set_title(
            f"Drill tip during the feed: lateral deviation max {metrics['lateral_deviation'] * 1e6:.2f} µm "
            f"(target {lateral_target:g})\nfinal depth error {metrics['final_depth_error'] * 1e6:.2f} µm "
            f"(target {TARGETS['final_depth_error'] * 1e6:g}), overshoot "
            f"{metrics['depth_overshoot'] * 1e6:.2f} µm (target {TARGETS['depth_overshoot'] * 1e6:g})"
        )
        ax.set_xlabel("depth along the drilling axis (mm)")
        ax.set_ylabel("distance from the axis (µm)")
        ax.set_ylim(bottom=0.0, top=top)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)

        ax = axes[1, 1]
        tw = t[window]
        ax.plot(tw, depth * 1e3, color="tab:red", lw=1.2, label="actual depth (mm)")
        ax.plot(tw, planned_depth * 1e3, "k--", lw=1, label="planned depth (mm)")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("depth (mm)")
        ax.grid(alpha=0.3)
        twin = ax.twinx()
        twin.plot(t[window], log.thrust[window], color="tab:blue", lw=1, label="bone thrust (N)")
        twin.set_ylabel("thrust (N)", color="tab:blue")
        ax.set_title("Feed: depth and bone thrust")
        lines = ax.get_lines() + twin.get_lines()
        ax.legend(lines, [line.get_label() for line in lines], fontsize=8, loc="upper left")
    else:
        path_info = result.trajectory.paths[0]
        direction = (path_info.end - path_info.start) / np.linalg.norm(path_info.end - path_info.start)
        offset = log.tool0 - path_info.start
        along = offset @ direction
        deviation = np.linalg.norm(offset - along[:, None] * direction, axis=1)
        ax = axes[1, 0]
        ax.plot(log.planned_tool0[:, 0], log.planned_tool0[:, 1], "k--", lw=1.5, label="planned")
        ax.plot(log.tool0[:, 0], log.tool0[:, 1], color="tab:red", lw=1, label="actual")
        ax.set_title("tool0 path seen from above (x, y)")
        ax.set_xlabel("x (m)")
        ax.set_ylabel("y (m)")
        ax.axis("equal")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ax = axes[1, 1]
        ax.plot(t, deviation * 1e6, color="tab:red", lw=1)
        ax.set_title(
            f"tool0 distance from the line: max {metrics['line_deviation'] * 1e6:.2f} µm "
            f"(target {TARGETS['line_deviation'] * 1e6:g})"
        )
        ax.set_xlabel("time (s)")
        ax.set_ylabel("distance (µm)")
        ax.grid(alpha=0.3)
    fig.suptitle(f"QUIROBOT closed-loop simulation: {task.path.stem}", fontsize=13)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
