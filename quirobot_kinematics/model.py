"""The kinematic model: the few numbers FK, IK and Jacobians need, read from the parameter file.

Built once from `RobotParameters` (quirobot_description.parameters.load_parameters) and passed to
every kinematics function as a value: no global state, no file access in the core.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from quirobot_description.geometric_errors import GeometricErrors
from quirobot_description.joint_names import REVOLUTE_JOINTS
from quirobot_description.parameters import JOINT_NAMES, RobotParameters

#: Index of the revolute joints in q = (d1, d2, d3, theta4, theta5): (3, 4).
REVOLUTE = tuple(JOINT_NAMES.index(name) for name in REVOLUTE_JOINTS)

#: URDF rpy (rad) of tool0 in wrist_pitch_link (xacro tool0_joint): R = [[0,0,1],[1,0,0],[0,1,0]],
#: tool z along link 5, as the report's tool frame 5'.
TOOL0_RPY = (math.pi / 2, 0.0, math.pi / 2)


class KinematicsError(ValueError):
    """Bad input to a kinematics function (wrong shape, NaN/inf, undefined quantity)."""


@dataclass(frozen=True)
class KinematicModel:
    """Lengths (m) and joint limits (m, rad) of the arm, in the report's joint order.

    lower, upper: (5,) joint limits for q = (d1, d2, d3, theta4, theta5).
    feed_lower, feed_upper: drill feed travel along tool z, m.
    errors: the machine's identified geometric errors (a calibration file, `calibrated`), which
    FK and IK then use (quirobot_kinematics.geometric); None: the nominal closed form.
    """

    l4: float
    l5: float
    lower: np.ndarray
    upper: np.ndarray
    feed_lower: float
    feed_upper: float
    joint_names: tuple[str, ...] = JOINT_NAMES
    errors: GeometricErrors | None = None

    @classmethod
    def from_parameters(cls, parameters: RobotParameters) -> KinematicModel:
        lower = parameters.lower_limits.copy()
        upper = parameters.upper_limits.copy()
        lower.setflags(write=False)
        upper.setflags(write=False)
        return cls(
            l4=parameters.l4,
            l5=parameters.l5,
            lower=lower,
            upper=upper,
            feed_lower=parameters.drill.feed.lower,
            feed_upper=parameters.drill.feed.upper,
        )

    def calibrated(self, errors: GeometricErrors | None) -> KinematicModel:
        """This model with the identified geometric `errors` (None: the nominal model)."""
        return replace(self, errors=errors)

    @cached_property
    def actual_chains(self) -> dict[int, tuple[GeometricErrors, object]]:
        """quirobot_kinematics.geometric's memo of the actual machines this model was evaluated
        with: id(errors) -> (errors, their chain's constants), filled by it."""
        return {}

    @cached_property
    def limit_lists(self) -> tuple[list[float], list[float]]:
        """(lower, upper) as Python lists, for the scalar fast paths."""
        return self.lower.tolist(), self.upper.tolist()

    @cached_property
    def default_seed(self) -> list[float]:
        """The zero configuration clipped into the limits (IK seed when none is given)."""
        return [min(max(0.0, lo), hi) for lo, hi in zip(*self.limit_lists, strict=True)]

    def within_limits(self, q: np.ndarray, tolerance: float = 0.0) -> bool:
        """True if every joint of q (5,) lies in [lower - tolerance, upper + tolerance]."""
        q = np.asarray(q, dtype=float)
        return bool(np.all(q >= self.lower - tolerance) and np.all(q <= self.upper + tolerance))


def describe_joint_value(index: int, value: float) -> str:
    """'0.25 m' for a gantry joint, '45 deg' for a wrist joint (value in SI)."""
    if index in REVOLUTE:
        return f"{np.degrees(value):.6g} deg"
    return f"{value:.6g} m"


def as_feed(feed: object) -> float:
    """The drill feed (m along tool z) as a float, refusing non-numbers, NaN and inf."""
    try:
        value = float(feed)
    except (TypeError, ValueError) as error:
        raise KinematicsError(f"drill feed must be a number in m, got {feed!r}") from error
    if not math.isfinite(value):
        raise KinematicsError(f"drill feed must be finite, got {value}")
    return value


def as_joint_vector(q: object, what: str = "q") -> np.ndarray:
    """q as a float array of shape (5,), refusing other shapes, NaN and inf by name."""
    try:
        array = np.asarray(q, dtype=float)
    except (TypeError, ValueError) as error:
        raise KinematicsError(f"{what} must be 5 numbers (d1, d2, d3, theta4, theta5), got {q!r}") from error
    if array.shape != (5,):
        raise KinematicsError(
            f"{what} must have shape (5,) (d1, d2, d3, theta4, theta5), got shape {array.shape}"
        )
    if not np.all(np.isfinite(array)):
        bad = [JOINT_NAMES[i] for i in np.flatnonzero(~np.isfinite(array))]
        raise KinematicsError(
            f"{what} must be finite; {', '.join(bad)} is {array[~np.isfinite(array)].tolist()}"
        )
    return array
