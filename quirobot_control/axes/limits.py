"""The limits of the commanded axes (those of the mounted tool, quirobot_description.parameters.axes_for),
from the parameter file (numpy only).

The planner (planning.trajectory) keeps its motions inside these limits and the hardware
component's safety layer (hardware.component, safety.motion_monitor) enforces them; this module needs neither
the planner's ruckig nor the simulation, so the real robot's drive path loads only what it uses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

import numpy as np

from quirobot_description.parameters import RobotParameters, axes_for


class PlanningError(ValueError):
    """The requested motion cannot be planned; the message names the joint and the amount."""


def stopping_position(position, velocity, deceleration, lead_time=0.0):
    """Where an axis comes to rest if told to stop now: it goes on at `velocity` for `lead_time` s
    (the stop reaches the drive at its next sample), then ramps to zero at `deceleration`:
    position + v * lead_time + v * |v| / (2 * deceleration) (m or rad; SI units throughout).

    Plain arithmetic, so floats (the per-cycle checks) and numpy arrays of any matching shapes
    (a plan's (N, 6) samples against (6,) decelerations) alike."""
    return position + velocity * lead_time + velocity * abs(velocity) / (2.0 * deceleration)


@dataclass(frozen=True)
class JointLimits:
    """Limits of the commanded axes `names` (arrays of shape (n,), SI units, `names` order).

    The planner keeps positions inside [soft_lower, soft_upper] (the URDF safety_controller
    range) and velocities within the safety_controller's bound k_position * (distance to the soft
    limit ahead), so the safety layer never has to clip a planned command.
    """

    names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    soft_lower: np.ndarray
    soft_upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    jerk: np.ndarray
    k_position: np.ndarray  # 1/s, safety_controller gain

    @classmethod
    def from_parameters(cls, params: RobotParameters, axes: Sequence[str] = axes_for("drill")) -> JointLimits:
        """The limits of `axes` (default the drill's, axes_for("drill")), in that order: an arm joint's
        from `params.joints`, a tool's axis from its tool (the drill feed from `params.drill`)."""
        sources = [params.axis(axis) for axis in axes]  # a joint's or its tool's, under one set of names
        arrays = {
            f.name: np.array([getattr(s, f.name) for s in sources]) for f in fields(cls) if f.name != "names"
        }
        return cls(names=tuple(axes), **arrays)

    def select(self, names: Sequence[str]) -> JointLimits:
        """The limits of the axes `names`, in that order (arrays (len(names),)): e.g. the joints of a
        hardware component's <ros2_control> block. An unknown name raises ValueError naming it."""
        unknown = [name for name in names if name not in self.names]
        if unknown:
            raise ValueError(f"no limits for axis {', '.join(unknown)}; the axes are {', '.join(self.names)}")
        index = [self.names.index(name) for name in names]
        arrays = {f.name: getattr(self, f.name)[index] for f in fields(self) if f.name != "names"}
        return replace(self, names=tuple(names), **arrays)

    def check_envelope(self, positions: np.ndarray, velocities: np.ndarray, dt: float, what: str) -> None:
        """Refuse samples (N, 6) moving towards a soft limit faster than the safety_controller allows:
        v <= k_position * (soft_upper - q) and v >= -k_position * (q - soft_lower)."""
        slack = 1e-9 + 1e-6 * self.velocity
        upper = self.k_position * (self.soft_upper - positions) + slack
        lower = -self.k_position * (positions - self.soft_lower) - slack
        bad = (velocities > upper) | (velocities < lower)
        if bad.any():
            k, j = np.argwhere(bad)[0]
            side = "upper" if velocities[k, j] > upper[k, j] else "lower"
            bound = upper[k, j] if side == "upper" else lower[k, j]
            raise PlanningError(
                f"{what}: joint {self.names[j]} runs into its soft {side} limit at t = {k * dt:.3f} s: "
                f"{velocities[k, j]:.4g} at {positions[k, j]:.6g}, the safety controller allows {bound:.4g}"
            )

    def check_position(self, q: np.ndarray, what: str) -> None:
        """Raise PlanningError if q (6,) leaves the soft range, naming the joint and the excess."""
        q = np.asarray(q, dtype=float)
        if q.shape != (len(self.names),):
            raise PlanningError(f"{what}: expected {len(self.names)} joint values, got shape {q.shape}")
        for i, name in enumerate(self.names):
            if not math.isfinite(q[i]):
                raise PlanningError(f"{what}: joint {name} is {q[i]}")
            if q[i] < self.soft_lower[i] - 1e-12:
                raise PlanningError(
                    f"{what}: joint {name} at {q[i]:.6g} is below its soft limit {self.soft_lower[i]:.6g} "
                    f"by {self.soft_lower[i] - q[i]:.3g}"
                )
            if q[i] > self.soft_upper[i] + 1e-12:
                raise PlanningError(
                    f"{what}: joint {name} at {q[i]:.6g} is above its soft limit {self.soft_upper[i]:.6g} "
                    f"by {q[i] - self.soft_upper[i]:.3g}"
                )
