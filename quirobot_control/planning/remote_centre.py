"""A remote centre of motion (RCM) in software: servo the arthroscope through a portal.

The scope is a rod of length L along tool0's approach vector a (tip = tool0 + L a). Its state is
the direction a and the insertion depth s of the tip past the portal point P, so every pose the
solver commands has tool0 = P + (s - L) a: the axis passes through P by construction, and the
5-DOF closed-form IK (position + approach) gives the joints. What can make the axis leave P is
only what lies between two commands (the joints interpolated by the controller, the plant's
tracking), which `quirobot simulate --task arthroscopy` measures as metrics.rcm_error.

A command is MoveIt Servo's TwistStamped: linear v (m/s) and angular w (rad/s) of the scope tip,
in the world frame. Under the RCM the tip moves by pivoting about P and by insertion:
- insertion rate  ds/dt = v . a;
- pivot rate      w_p = (w - (w . a) a) + a x v_perp / s   (v_perp: v across the axis; a tip
  moving sideways by v_perp pivots the scope by v_perp / s);
- the roll w . a is dropped: the wrist (theta4 about the vertical, theta5 about a horizontal axis)
  cannot roll the scope, and the scope's optics are symmetric.
Limits, in this order: the tip's speed and the pivot rate (task file) scale the whole twist down,
the insertion depth is clamped to its range, then the joint velocity limits scale the step (the
step is re-solved with the scale, so the axis still passes through P). A target the IK refuses
(a joint past its soft limit: the workspace) or a scope in a no-go zone holds the last pose and
says why. The pivot and insertion rates change at most by their accelerations (smoothing). The
dead-man: a step more than `timeout` s after the latest command brakes at those accelerations and
holds (MoveIt Servo's incoming_command_timeout), and counts as a hold.

Rejected: resolved rate on the 6x5 Jacobian with the RCM as a constraint row (MoveIt Servo's
approach for a free end effector): it drifts from P by the integration error, where re-solving the
pose from (a, s) keeps P exact at every command.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from quirobot_control.axes.virtual_fixtures import NoGoZone
from quirobot_kinematics import ApproachTarget, KinematicModel, forward_kinematics, inverse_kinematics

__all__ = ["RcmLimits", "RcmServo", "ServoStep", "Twist", "ViewCone", "axis_distance", "view_cone"]


@dataclass(frozen=True)
class Twist:
    """MoveIt Servo's TwistStamped, world frame: linear (3,) m/s, angular (3,) rad/s, stamp s."""

    linear: np.ndarray
    angular: np.ndarray
    stamp: float

    def __post_init__(self) -> None:
        for name in ("linear", "angular"):
            value = np.asarray(getattr(self, name), dtype=float)
            if value.shape != (3,) or not np.isfinite(value).all():
                raise ValueError(f"twist {name} must be 3 finite numbers, got {getattr(self, name)!r}")
            object.__setattr__(self, name, value)
        if not np.isfinite(self.stamp):
            raise ValueError(f"twist stamp must be a finite time in s, got {self.stamp!r}")


@dataclass(frozen=True)
class RcmLimits:
    """The servo's limits (task file): tip speed m/s, pivot rate rad/s, insertion depth range m
    (tip past the portal), dead-man timeout s; joint velocities (5,) m/s or rad/s."""

    tip_speed: float
    pivot_rate: float
    min_depth: float
    max_depth: float
    timeout: float
    joint_velocity: np.ndarray
    pivot_acceleration: float = 1.0  # rad/s^2: the pivot rate's change per second
    insertion_acceleration: float = 0.1  # m/s^2: the insertion rate's change per second

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_depth < self.max_depth:
            raise ValueError(
                f"insertion depth range must be 0 <= min < max, got {self.min_depth} to {self.max_depth} m"
            )


@dataclass(frozen=True)
class ServoStep:
    """One servo cycle's output: joints (5,), their velocity (5,), the scope state, why it held."""

    q: np.ndarray
    qd: np.ndarray
    direction: np.ndarray  # (3,) unit, the scope axis a
    depth: float  # m, the tip past the portal
    held: str | None = None  # None: moved (or commanded to stand still); else why it held


@dataclass(frozen=True)
class ViewCone:
    """The scope's view: apex at the tip, axis a, half angle (rad) = field of view / 2."""

    apex: np.ndarray
    axis: np.ndarray
    half_angle: float


def axis_distance(q: np.ndarray, portal: np.ndarray, model: KinematicModel) -> np.ndarray:
    """Distance (m) of the portal from the scope axis (tool0's approach line) at joints q (5,) or
    (N, 5): the RCM error."""
    T = forward_kinematics(np.asarray(q, dtype=float), model)
    origin, a = T[..., :3, 3], T[..., :3, 2]
    offset = np.asarray(portal, dtype=float) - origin
    along = np.sum(offset * a, axis=-1)
    return np.linalg.norm(offset - along[..., None] * a, axis=-1)


def view_cone(q: np.ndarray, scope_length: float, field_of_view: float, model: KinematicModel) -> ViewCone:
    """The arthroscope's view cone at joints q (5,) from its field of view (rad, full angle)."""
    T = forward_kinematics(np.asarray(q, dtype=float), model)
    a = T[:3, 2]
    return ViewCone(T[:3, 3] + scope_length * a, a, 0.5 * field_of_view)


def _rotate(vector: np.ndarray, rotation: np.ndarray) -> np.ndarray:
    """Rodrigues: `vector` turned by the rotation vector `rotation` (rad)."""
    angle = float(np.linalg.norm(rotation))
    if angle < 1e-15:
        return vector
    k = rotation / angle
    c, sn = np.cos(angle), np.sin(angle)
    return vector * c + np.cross(k, vector) * sn + k * (k @ vector) * (1 - c)


@dataclass
class RcmServo:
    """The RCM servo (module docstring). `q` (5,) must hold the scope through the portal."""

    portal: np.ndarray  # (3,) m, world
    scope_length: float  # m, tool0 to the scope tip
    scope_radius: float  # m, for the no-go zones
    limits: RcmLimits
    model: KinematicModel
    q: np.ndarray
    zones: tuple[NoGoZone, ...] = ()
    alignment_tolerance: float = 1e-6  # m: the start pose's axis at most this far from the portal
    command: Twist | None = None
    commands: int = 0  # commands received
    holds: dict[str, int] = field(default_factory=dict)  # why it held -> cycles held so
    pivot_rate: np.ndarray = field(default_factory=lambda: np.zeros(3))  # rad/s, the applied one
    insertion_rate: float = 0.0  # m/s, the applied one

    def __post_init__(self) -> None:
        self.portal = np.asarray(self.portal, dtype=float)
        self.q = np.asarray(self.q, dtype=float).copy()
        error = float(axis_distance(self.q, self.portal, self.model))
        if error > self.alignment_tolerance:
            raise ValueError(
                f"the start pose's scope axis passes {error * 1e3:.3f} mm from the portal "
                f"(at most {self.alignment_tolerance * 1e3:.3g} mm)"
            )
        self.direction, self.depth = self._state(self.q)

    def _state(self, q: np.ndarray) -> tuple[np.ndarray, float]:
        T = forward_kinematics(q, self.model)
        a = T[:3, 2]
        return a, float((T[:3, 3] + self.scope_length * a - self.portal) @ a)

    def receive(self, twist: Twist) -> None:
        """A servo command (TwistStamped); the latest one is used until the dead-man timeout."""
        self.command = twist
        self.commands += 1

    def _solve(self, direction: np.ndarray, depth: float) -> np.ndarray:
        position = self.portal + (depth - self.scope_length) * direction
        return inverse_kinematics(ApproachTarget(position, direction), self.model, seed=self.q)

    def _zone(self, q: np.ndarray) -> str | None:
        T = forward_kinematics(q, self.model)
        start = T[:3, 3]
        tip = start + self.scope_length * T[:3, 2]
        for zone in self.zones:
            if bool(np.any(zone.hits(start[None], tip[None], self.scope_radius))):
                return zone.name
        return None

    def step(self, now: float, dt: float) -> ServoStep:
        """The next joints after dt s at time `now` (s): the command applied, or a hold."""
        twist = self.command
        timed_out = twist is not None and now - twist.stamp > self.limits.timeout
        a, s = self.direction, self.depth
        if twist is None or timed_out:
            pivot, v_along = np.zeros(3), 0.0  # the dead-man: brake to a hold
        else:
            v, w = twist.linear, twist.angular
            v_along = float(v @ a)
            v_perp = v - v_along * a
            pivot = (w - (w @ a) * a) + np.cross(a, v_perp) / max(s, self.limits.min_depth, 1e-3)
        # The tip's speed and the pivot rate bound the whole twist (its direction kept).
        tip_speed = float(np.hypot(v_along, np.linalg.norm(pivot) * s))
        rate = float(np.linalg.norm(pivot))
        scale = min(
            1.0,
            self.limits.tip_speed / tip_speed if tip_speed > 0 else 1.0,
            self.limits.pivot_rate / rate if rate > 0 else 1.0,
        )
        pivot, v_along = pivot * scale, v_along * scale
        # Smoothing (MoveIt Servo filters its commands too): the rates change at most by their
        # accelerations, so the joints' commands have bounded accelerations the loop can track.
        change = pivot - self.pivot_rate
        most = self.limits.pivot_acceleration * dt
        if np.linalg.norm(change) > most:
            change *= most / float(np.linalg.norm(change))
        pivot = self.pivot_rate + change
        step = self.limits.insertion_acceleration * dt
        v_along = float(np.clip(v_along, self.insertion_rate - step, self.insertion_rate + step))
        if timed_out and not pivot.any() and v_along == 0.0:
            return self._hold(dt, "dead-man: no command within the timeout")
        if twist is None:
            return self._hold(dt, None)
        scale = 1.0
        for _ in range(3):
            a_new = _rotate(a, pivot * scale * dt - (pivot * scale * dt @ a) * a)
            a_new /= np.linalg.norm(a_new)
            s_new = float(np.clip(s + v_along * scale * dt, self.limits.min_depth, self.limits.max_depth))
            try:
                q_new = self._solve(a_new, s_new)
            except ValueError as error:
                return self._hold(dt, f"workspace: {error}")
            qd = (q_new - self.q) / dt
            ratio = float(np.max(np.abs(qd) / self.limits.joint_velocity))
            if ratio <= 1.0 + 1e-9:
                break
            scale *= 0.98 / ratio  # the joint speed limit: the same step, slower
        else:
            return self._hold(dt, "joint velocity limit: the step cannot be slowed enough")
        zone = self._zone(q_new)
        if zone is not None:
            return self._hold(dt, f"no-go zone {zone}: the scope would enter it")
        self.q, self.direction, self.depth = q_new, a_new, s_new
        self.pivot_rate, self.insertion_rate = pivot * scale, v_along * scale
        return ServoStep(q_new.copy(), qd, a_new, s_new)

    def _hold(self, dt: float, reason: str | None) -> ServoStep:
        self.pivot_rate, self.insertion_rate = np.zeros(3), 0.0
        if reason is not None:
            self.holds[reason] = self.holds.get(reason, 0) + 1
        return ServoStep(self.q.copy(), np.zeros_like(self.q), self.direction, self.depth, reason)
