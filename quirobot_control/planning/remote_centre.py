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
Limits, in this order: the tip's speed and the pivot rate (task file) scale the whole twist down;
the pivot and insertion rates change at most by their accelerations (smoothing); the scope stays
in its cone and its depth range, braking ahead of their boundaries; then the joint velocity limits
scale the step (re-solved with the scale, so the axis still passes through P). A target the IK
refuses (a joint past its soft limit: the workspace) or a scope or tool body in a no-go zone
holds the last pose and says why.

- The cone: the scope's axis stays within `cone_half_angle` of the entry direction e (the
  portal's, the task file's `direction`), and the tip within `min_depth`..`max_depth` past P.
  Before: a held pivot turned the scope 104-166 deg from e, its back end inside the portal. The
  rate towards a boundary is at most sqrt(2 * acceleration * room) (and room / step), the room
  being the angle (or depth) left (its discrete form, step by step), so the scope brakes at the
  smoothing's acceleration and stops on the boundary; the motion along it and back inside goes
  on (a virtual fixture, as the command limiter brakes ahead of the soft limits:
  safety.motion_monitor). Such a step is `limited`.
- The dead-man: a command moves the scope for at most `timeout` s after its stamp (MoveIt Servo's
  incoming_command_timeout); later, the servo brakes at the accelerations and holds, which
  counts as a hold. A step of dt moves for at most what is left of the command's `timeout`, so a
  slow caller (1 Hz) cannot stretch one command over its whole period (before: 20 mm on one 1 s
  step). The command's age is the larger of the clock's (now - stamp) and the steps' dt counted
  since it arrived: a clock stepping back cannot keep a command alive (before: 24 mm and 23 deg
  after the operator let go).
- The no-go zones: the scope (tool0 to the tip, its radius) and the tool body behind it (the
  wrist_pitch axis to tool0, link 5's radius, as axes.virtual_fixtures checks the drill's; its
  capsule covers the camera coupler at tool0) are checked at every step.

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
    (tip past the portal), the cone's half angle rad (about the entry direction), dead-man timeout
    s; joint velocities (5,) m/s or rad/s."""

    tip_speed: float
    pivot_rate: float
    min_depth: float
    max_depth: float
    cone_half_angle: float
    timeout: float
    joint_velocity: np.ndarray
    pivot_acceleration: float = 1.0  # rad/s^2: the pivot rate's change per second
    insertion_acceleration: float = 0.1  # m/s^2: the insertion rate's change per second

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_depth < self.max_depth:
            raise ValueError(
                f"insertion depth range must be 0 <= min < max, got {self.min_depth} to {self.max_depth} m"
            )
        if not 0.0 < self.cone_half_angle <= np.pi / 2:
            angle = np.degrees(self.cone_half_angle)
            raise ValueError(f"the cone's half angle must be in (0, 90] deg, got {angle:.4g} deg")


@dataclass(frozen=True)
class ServoStep:
    """One servo cycle's output: joints (5,), their velocity (5,), the scope state, why it held."""

    q: np.ndarray
    qd: np.ndarray
    direction: np.ndarray  # (3,) unit, the scope axis a
    depth: float  # m, the tip past the portal
    held: str | None = None  # None: moved (or commanded to stand still); else why it held
    limited: str | None = None  # a boundary (the cone, the depth range) that cut the command


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


def _angle(a: np.ndarray, b: np.ndarray) -> float:
    """rad between the unit vectors a and b (3,)."""
    return float(np.arccos(np.clip(a @ b, -1.0, 1.0)))


def _towards_boundary(rate: float, room: float, acceleration: float, move: float) -> float:
    """The largest rate (per s) towards a boundary `room` away (>= 0) from which steps of `move` s
    braking by `acceleration` * `move` each still stop on it: v^2 / 2a + v move / 2 <= room (the
    discrete braking distance, this step's motion included), and v move <= room."""
    room = max(room, 0.0)
    braking = acceleration * (np.sqrt(0.25 * move * move + 2.0 * room / acceleration) - 0.5 * move)
    return min(float(braking), room / move)


@dataclass
class RcmServo:
    """The RCM servo (module docstring). `q` (5,) must hold the scope through the portal, its axis
    within the cone about `entry` and its tip within the depth range."""

    portal: np.ndarray  # (3,) m, world
    entry: np.ndarray  # (3,) unit, the portal's entry direction: the cone's axis
    scope_length: float  # m, tool0 to the scope tip
    scope_radius: float  # m, for the no-go zones
    body_radius: float  # m, the tool body (link 5) behind tool0, for the no-go zones
    limits: RcmLimits
    model: KinematicModel
    q: np.ndarray
    zones: tuple[NoGoZone, ...] = ()
    alignment_tolerance: float = 1e-6  # m: the start pose's axis at most this far from the portal
    command: Twist | None = None
    commands: int = 0  # commands received
    holds: dict[str, int] = field(default_factory=dict)  # kind of hold or limit -> cycles so
    why: str | None = None  # the latest hold or limit, in full
    pivot_rate: np.ndarray = field(default_factory=lambda: np.zeros(3))  # rad/s, the applied one
    insertion_rate: float = 0.0  # m/s, the applied one
    _counted: float = 0.0  # s, the steps' dt since the command arrived (plus its age then)

    def __post_init__(self) -> None:
        self.portal = np.asarray(self.portal, dtype=float)
        self.entry = np.asarray(self.entry, dtype=float)
        self.entry = self.entry / np.linalg.norm(self.entry)
        self.q = np.asarray(self.q, dtype=float).copy()
        error = float(axis_distance(self.q, self.portal, self.model))
        if error > self.alignment_tolerance:
            raise ValueError(
                f"the start pose's scope axis passes {error * 1e3:.3f} mm from the portal "
                f"(at most {self.alignment_tolerance * 1e3:.3g} mm)"
            )
        self.direction, self.depth = self._state(self.q)
        why = self.outside(self.direction, self.depth)
        if why is not None:
            raise ValueError(f"the start pose: {why}")

    def _state(self, q: np.ndarray) -> tuple[np.ndarray, float]:
        T = forward_kinematics(q, self.model)
        a = T[:3, 2]
        return a, float((T[:3, 3] + self.scope_length * a - self.portal) @ a)

    def outside(self, direction: np.ndarray, depth: float, tolerance: float = 1e-9) -> str | None:
        """Why the scope along `direction` (3,) with its tip `depth` m past the portal is outside
        the cone or the depth range (one line), or None."""
        limits = self.limits
        angle = _angle(np.asarray(direction, dtype=float), self.entry)
        if angle > limits.cone_half_angle + tolerance:
            return (
                f"the scope axis is {np.degrees(angle):.1f} deg from the portal's entry direction "
                f"(at most {np.degrees(limits.cone_half_angle):.1f} deg)"
            )
        if not limits.min_depth - tolerance <= depth <= limits.max_depth + tolerance:
            return (
                f"the scope tip is {depth * 1e3:.1f} mm past the portal, outside "
                f"{limits.min_depth * 1e3:.0f}-{limits.max_depth * 1e3:.0f} mm"
            )
        return None

    def receive(self, twist: Twist, now: float | None = None) -> None:
        """A servo command (TwistStamped), received at `now` (s; None: at its stamp); the latest
        one is used until the dead-man timeout after its stamp."""
        self.command = twist
        self.commands += 1
        age = 0.0 if now is None else float(now) - twist.stamp
        self._counted = age if age > 0.0 else 0.0

    def _solve(self, direction: np.ndarray, depth: float) -> np.ndarray:
        position = self.portal + (depth - self.scope_length) * direction
        return inverse_kinematics(ApproachTarget(position, direction), self.model, seed=self.q)

    def zone(self, q: np.ndarray) -> tuple[str, str] | None:
        """(zone, part) of the first no-go zone the scope or the tool body at q (5,) touches."""
        T = forward_kinematics(q, self.model)
        tool0, a = T[:3, 3], T[:3, 2]
        parts = (
            ("scope", tool0, tool0 + self.scope_length * a, self.scope_radius),
            ("tool body", tool0 - self.model.l5 * a, tool0, self.body_radius),
        )
        for zone in self.zones:
            for part, start, end, radius in parts:
                if bool(np.any(zone.hits(start[None], end[None], radius))):
                    return zone.name, part
        return None

    def _depth_bound(self, s: float, rate: float, move: float) -> tuple[float, bool]:
        """The insertion rate (m/s) braked ahead of the depth range's ends; whether it was cut."""
        limits = self.limits
        acceleration = limits.insertion_acceleration
        deeper = _towards_boundary(rate, limits.max_depth - s, acceleration, move)
        shallower = _towards_boundary(-rate, s - limits.min_depth, acceleration, move)
        bounded = float(np.clip(rate, -shallower, deeper))
        return bounded, abs(bounded - rate) > 1e-12

    def _cone_bound(self, a: np.ndarray, pivot: np.ndarray, move: float) -> tuple[np.ndarray, bool]:
        """The pivot rate (3,) rad/s braked ahead of the cone's boundary; whether it was cut.
        Only its outward part is cut: a' = pivot x a, the outward unit u = (a cos t - e) / sin t
        (t the angle from the entry direction e), dt/dt = a' . u."""
        e = self.entry
        cos_t = float(np.clip(a @ e, -1.0, 1.0))
        outward = a * cos_t - e
        sin_t = float(np.linalg.norm(outward))
        if sin_t < 1e-12:  # on the cone's axis: every direction has the whole half angle
            return pivot, False
        u = outward / sin_t
        velocity = np.cross(pivot, a)
        rate = float(velocity @ u)
        room = self.limits.cone_half_angle - float(np.arccos(cos_t))
        most = _towards_boundary(rate, room, self.limits.pivot_acceleration, move)
        if rate <= most:
            return pivot, False
        velocity = velocity - (rate - most) * u
        return np.cross(a, velocity), True  # pivot = a x a' for a pivot across a

    def _into_cone(self, a: np.ndarray) -> np.ndarray:
        """The unit direction a (3,), or the nearest on the cone's boundary if outside it (a guard
        against the step's curvature: the rates already stop on it)."""
        half = self.limits.cone_half_angle
        if _angle(a, self.entry) <= half:
            return a
        across = a - (a @ self.entry) * self.entry
        return np.cos(half) * self.entry + np.sin(half) * across / np.linalg.norm(across)

    def step(self, now: float, dt: float) -> ServoStep:
        """The next joints after dt s at time `now` (s): the command applied, or a hold."""
        if not (np.isfinite(dt) and dt > 0.0):
            raise ValueError(f"servo step: dt must be a positive number of s, got {dt!r}")
        twist = self.command
        limits = self.limits
        valid = 0.0  # s of this step the command is still valid for
        if twist is not None:
            age = max(now - twist.stamp, self._counted)
            valid = min(dt, max(0.0, limits.timeout - age))
        self._counted += dt
        a, s = self.direction, self.depth
        following = valid > 0.0
        if following:
            v, w = twist.linear, twist.angular
            v_along = float(v @ a)
            v_perp = v - v_along * a
            pivot = (w - (w @ a) * a) + np.cross(a, v_perp) / max(s, limits.min_depth, 1e-3)
        else:
            pivot, v_along = np.zeros(3), 0.0  # no command, or the dead-man: brake to a hold
        # The tip's speed and the pivot rate bound the whole twist (its direction kept).
        tip_speed = float(np.hypot(v_along, np.linalg.norm(pivot) * s))
        rate = float(np.linalg.norm(pivot))
        scale = min(
            1.0,
            limits.tip_speed / tip_speed if tip_speed > 0 else 1.0,
            limits.pivot_rate / rate if rate > 0 else 1.0,
        )
        pivot, v_along = pivot * scale, v_along * scale
        # Smoothing (MoveIt Servo filters its commands too): the rates change at most by their
        # accelerations, so the joints' commands have bounded accelerations the loop can track.
        change = pivot - self.pivot_rate
        most = limits.pivot_acceleration * dt
        if np.linalg.norm(change) > most:
            change *= most / float(np.linalg.norm(change))
        pivot = self.pivot_rate + change
        step = limits.insertion_acceleration * dt
        v_along = float(np.clip(v_along, self.insertion_rate - step, self.insertion_rate + step))
        if not following and not pivot.any() and v_along == 0.0:
            return self._hold(None if twist is None else "dead-man: no command within the timeout")
        move = valid if following else dt  # s of motion in this step: braking goes on for dt
        v_along, deep = self._depth_bound(s, v_along, move)
        pivot, wide = self._cone_bound(a, pivot, move)
        limited = None
        if following and (deep or wide):
            limited = (
                f"pivot cone: at most {np.degrees(limits.cone_half_angle):.1f} deg from the entry direction"
                if wide
                else f"insertion depth: {limits.min_depth * 1e3:.0f}-{limits.max_depth * 1e3:.0f} mm"
            )
        scale = 1.0
        for _ in range(3):
            a_new = self._into_cone(_rotate(a, pivot * scale * move))
            a_new /= np.linalg.norm(a_new)
            s_new = float(np.clip(s + v_along * scale * move, limits.min_depth, limits.max_depth))
            try:
                q_new = self._solve(a_new, s_new)
            except ValueError as error:
                return self._hold(f"workspace: {error}")
            qd = (q_new - self.q) / dt
            ratio = float(np.max(np.abs(qd) / limits.joint_velocity))
            if ratio <= 1.0 + 1e-9:
                break
            scale *= 0.98 / ratio  # the joint speed limit: the same step, slower
        else:
            return self._hold("joint velocity limit: the step cannot be slowed enough")
        inside = self.zone(q_new)
        if inside is not None:
            return self._hold(f"no-go zone {inside[0]}: the {inside[1]} would enter it")
        self.q, self.direction, self.depth = q_new, a_new, s_new
        self.pivot_rate, self.insertion_rate = pivot * scale, v_along * scale
        if limited is not None:
            self._count(limited)
        return ServoStep(q_new.copy(), qd, a_new, s_new, limited=limited)

    def _count(self, reason: str) -> None:
        """One more cycle held or limited by `reason`, counted by its kind (the text before ':'):
        a reason with numbers in it must not grow the table every cycle."""
        kind = reason.split(":", 1)[0]
        self.holds[kind] = self.holds.get(kind, 0) + 1
        self.why = reason

    def _hold(self, reason: str | None) -> ServoStep:
        self.pivot_rate, self.insertion_rate = np.zeros(3), 0.0
        if reason is not None:
            self._count(reason)
        return ServoStep(self.q.copy(), np.zeros_like(self.q), self.direction, self.depth, reason)
