"""Reachable workspace of tool0 for one approach direction: Monte Carlo volume and a plot.

For a fixed approach a the wrist angles are fixed (up to the two families), and tool0 = wrist
centre + l5 * a, the wrist centre sweeping the box of the three prismatic ranges: the exact
reachable set is that box shifted by l5 * a, or nothing if no wrist configuration within limits
points along a. `estimate_workspace` samples a box that contains the reachable set for every
approach and asks the vectorized IK which samples are reachable, so the sampled volume is an
independent check of that statement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from quirobot_kinematics.inverse import IKError, approach_inverse_kinematics_batch, approach_wrist_angles
from quirobot_kinematics.model import KinematicModel

#: Approach of a drill coming straight down onto the knee (the report's approach from above).
DOWN = (0.0, 0.0, -1.0)


@dataclass(frozen=True)
class WorkspaceEstimate:
    """Result of `estimate_workspace`. Lengths m, volumes m^3, world frame."""

    approach: np.ndarray  # (3,) unit approach direction
    wrist_angles: np.ndarray  # (K, 2) (theta4, theta5) within limits pointing along it, rad
    box_lower: np.ndarray  # (3,) corner of the sampled box
    box_upper: np.ndarray  # (3,)
    points: np.ndarray  # (N, 3) sampled tool0 positions
    reachable: np.ndarray  # (N,) bool
    volume: float  # sampled reachable volume
    volume_standard_error: float
    exact_volume: float  # product of the prismatic ranges if the wrist can point along a, else 0

    @property
    def samples(self) -> int:
        return int(self.points.shape[0])

    @property
    def hits(self) -> int:
        return int(self.reachable.sum())

    @property
    def approach_reachable(self) -> bool:
        return self.wrist_angles.shape[0] > 0

    def summary(self) -> dict:
        """Plain-data summary (JSON-ready)."""
        reached = self.points[self.reachable]
        return {
            "approach": self.approach.tolist(),
            "approach_reachable": self.approach_reachable,
            "wrist_angles_rad": self.wrist_angles.tolist(),
            "samples": self.samples,
            "reachable_samples": self.hits,
            "volume_m3": self.volume,
            "volume_standard_error_m3": self.volume_standard_error,
            "exact_volume_m3": self.exact_volume,
            "sampled_box_m": [self.box_lower.tolist(), self.box_upper.tolist()],
            "reachable_bounds_m": [reached.min(axis=0).tolist(), reached.max(axis=0).tolist()]
            if len(reached)
            else None,
        }


def sampling_box(model: KinematicModel) -> tuple[np.ndarray, np.ndarray]:
    """Box (lower (3,), upper (3,)) holding tool0 for every configuration within limits."""
    lower = np.array([model.lower[0], model.lower[1], -model.upper[2] - model.l4]) - model.l5
    upper = np.array([model.upper[0], model.upper[1], -model.lower[2] - model.l4]) + model.l5
    return lower, upper


def estimate_workspace(
    model: KinematicModel, approach: object = DOWN, samples: int = 100_000, seed: int = 0
) -> WorkspaceEstimate:
    """Monte Carlo estimate of the volume tool0 can reach with tool z along `approach` (3,)."""
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        raise IKError(f"samples must be a positive whole number, got {samples!r}")
    wrists = approach_wrist_angles(approach, model)
    direction = np.asarray(approach, dtype=float)
    direction = direction / np.linalg.norm(direction)
    lower, upper = sampling_box(model)
    points = np.random.default_rng(seed).uniform(lower, upper, size=(int(samples), 3))
    _, reachable = approach_inverse_kinematics_batch(points, direction, model)
    box_volume = float(np.prod(upper - lower))
    fraction = reachable.mean()
    exact = float(np.prod(model.upper[:3] - model.lower[:3])) if wrists.shape[0] else 0.0
    return WorkspaceEstimate(
        approach=direction,
        wrist_angles=wrists,
        box_lower=lower,
        box_upper=upper,
        points=points,
        reachable=reachable,
        volume=box_volume * float(fraction),
        volume_standard_error=box_volume * math.sqrt(fraction * (1.0 - fraction) / samples),
        exact_volume=exact,
    )


def plot_workspace(estimate: WorkspaceEstimate, path: str | Path, max_points: int = 20_000) -> Path:
    """Write a PNG: top view (x-y) and side view (x-z) of the reachable samples, axes in m."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    path = Path(path)
    reached = estimate.points[estimate.reachable][:max_points]
    missed = estimate.points[~estimate.reachable][: max_points // 4]
    figure, axes = plt.subplots(1, 2, figsize=(12, 5.5), constrained_layout=True)
    views = ((0, 1, "top view (looking down)", "y (m)"), (0, 2, "side view (looking along +y)", "z (m), up"))
    for axis, (i, j, name, ylabel) in zip(axes, views, strict=True):
        axis.scatter(missed[:, i], missed[:, j], s=1, c="0.85", label="sampled, unreachable", rasterized=True)
        axis.scatter(reached[:, i], reached[:, j], s=1, c="tab:blue", label="reachable", rasterized=True)
        axis.set_xlim(estimate.box_lower[i], estimate.box_upper[i])
        axis.set_ylim(estimate.box_lower[j], estimate.box_upper[j])
        axis.set_aspect("equal")
        axis.set_xlabel("x (m)")
        axis.set_ylabel(ylabel)
        axis.set_title(name)
        axis.grid(True, alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncol=2, markerscale=8)
    a = estimate.approach
    figure.suptitle(
        f"QUIROBOT tool0 workspace, approach a = ({a[0]:.3g}, {a[1]:.3g}, {a[2]:.3g}): "
        f"{estimate.volume:.3f} ± {estimate.volume_standard_error:.3f} m³ sampled "
        f"({estimate.samples} samples; exact {estimate.exact_volume:.3f} m³)"
    )
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
