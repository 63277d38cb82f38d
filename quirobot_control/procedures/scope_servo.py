"""The arthroscope's servo mode, ROS-free: what scope_servo_node runs (issue 22, item 2), and what
`quirobot simulate --task arthroscopy` runs (simulation.arthroscopy_procedure).

A session over the RCM servo (planning.remote_centre) with the mode a teleoperator enters and
leaves (scope_servo_node's lifecycle `activate` and `deactivate`; docs/ros.md, "Servo the scope"):

    state  event                         next   what happens
    off    enter(now) docked, fresh      on     the servo starts from the measured q, re-solved
    off    enter(now) otherwise          off    refused with the reason (unmeasured, stale
                                                states, off the portal, outside the cone or the
                                                depth range, in a no-go zone)
    off    receive(twist)                off    refused and counted; `why_off` says why
    off    step / leave                  off    nothing (step gives None)
    off    measure(q)                    off    recorded (the pose `enter` starts from)
    on     receive(twist) fresh, world   on     the servo's latest command (dead-man from it)
    on     receive(twist) stale/foreign  on     refused and counted by kind
    on     step, states fresh            on     the next joint command, or a hold (limits,
                                                cone, workspace, no-go zone, dead-man timeout)
    on     step, states stale            off    a fault: held as on leave, `fault` says why
    on     leave()                       off    the scope holds at the last command (`hold`)
    on     measure(q) off the portal     off    a fault: held as on leave, `fault` says why

- `measure(q, stamp, now)`: the measured joints q (5,) stamped `stamp` (s), received at `now`
  (s). The session keeps the latest; while on, a scope axis measured more than `dock_tolerance`
  from the portal (the knee moved, or the arm does not follow) is a fault: the mode leaves and
  holds, since pivoting on would lever the portal's tissue. Re-entering needs a docked scope.
- `enter(now)`: the latest measured joints must be fresh (safety.state_age: at most the task's
  `joint_state_timeout` old; before, the node entered on 5 s old states) and hold the scope
  through the task's portal within `dock_tolerance`, inside the cone and the depth range, clear of
  the no-go zones (the surgeon docks the scope by hand or by a planned move first); the servo
  then takes over from that pose, re-solved so that the axis passes through the portal exactly.
- `receive(linear, angular, now, stamp, frame_id)`: a TwistStamped (the tip's m/s and rad/s in
  `world`; an empty frame_id is `world`, as for DrillHole goals). Refused, with its kind: while
  the mode is off ("off": a stale stream must not move the scope on entering), in another frame
  ("frame"), stamped more than the dead-man timeout ago or ahead of the clock ("stale",
  safety.state_age.age_fault; before, the node stamped twists on receipt and applied an hour-old
  one), not finite ("malformed"). The servo's dead-man runs from the stamp (or the receipt, if
  earlier). `refusals` counts them by kind; `RefusalLog` says what to log, and when.
- `step(now, dt)`: the next joint command (5,) while the mode is on (None while off), the dead-man
  timeout holding when the stream stops (the servo's own). First the joint-state watchdog
  (safety.state_age.StateAge, dt counted per step: a clock stepping back cannot hide a silence):
  states older than `joint_state_timeout` are a fault that leaves and holds (before, the node went
  on commanding with none).
- `leave()`: the mode off; `hold` (5,) is the last command, where the scope stays (the node sends
  it once more with zero velocity, the controller holds it).
- `view_cone_markers()`: the scope's view cone (planning.scene) at the servo's pose.
- `check_command_period(task, period)`: a caller's command period (s) longer than the dead-man
  timeout is refused (scope_servo_node's `rate`: before, 1 Hz moved the tip 20 mm per command;
  the servo now also moves at most the timeout's worth per command, whatever the period).

Why the docking check and not a move to the portal here: the servo is for small motions about
the portal; a docking move is a planned trajectory (the DrillHole executor's kind of job).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from quirobot_control.planning.arthroscopy import ArthroscopyTask, servo_for
from quirobot_control.planning.remote_centre import RcmServo, ServoStep, Twist, axis_distance, view_cone
from quirobot_control.planning.scene import SceneMarker, view_cone_markers
from quirobot_control.safety.state_age import StateAge, age_fault
from quirobot_description.parameters import RobotParameters
from quirobot_kinematics import ApproachTarget, forward_kinematics, inverse_kinematics

__all__ = [
    "DOCK_TOLERANCE",
    "REFUSAL_LOG_PERIOD",
    "RefusalLog",
    "ScopeServoSession",
    "TwistRefusal",
    "VIEW_DEPTH",
    "WORLD",
    "check_command_period",
]

#: m: how far from the portal the measured scope axis may pass for the servo mode to start
#: (design assumption: a hand-docked scope sits in its trocar, whose bore is ~1 mm wider).
DOCK_TOLERANCE = 1e-3
#: m: how deep the view cone is drawn past the tip (design assumption: the knee joint's space).
VIEW_DEPTH = 0.03
#: The frame servo twists are given in (MoveIt Servo's planning frame here; "" means it too).
WORLD = "world"
#: s: a kind of refusal is logged at once, then at most once per this period with the count since
#: (design assumption: a 100 Hz stream refused for minutes stays a few lines a minute in the log).
REFUSAL_LOG_PERIOD = 2.0


def check_command_period(task: ArthroscopyTask, period: float) -> None:
    """ValueError (one line) when a command period (s) is longer than the task's dead-man timeout."""
    if not period <= task.timeout:
        raise ValueError(
            f"a command period of {period:.3g} s is longer than the dead-man timeout {task.timeout:.3g} s "
            f"of {task.path.name}: give at least {1.0 / task.timeout:.3g} Hz"
        )


@dataclass(frozen=True)
class TwistRefusal:
    """Why a twist was not applied: its kind ("off", "frame", "stale", "malformed") and one line."""

    kind: str
    why: str


@dataclass
class RefusalLog:
    """What to log of the refusals, and when: the first of each kind at once, then at most once
    per `period` s per kind, with the number refused since (a refused stream at 100 Hz must not
    fill the log, nor one kind hide another)."""

    period: float = REFUSAL_LOG_PERIOD
    _last: dict[str, float] = field(default_factory=dict)
    _since: Counter = field(default_factory=Counter)

    def report(self, refusal: TwistRefusal, now: float) -> str | None:
        """The line to log for `refusal` at `now` (s, a monotonic clock), or None (counted)."""
        kind = refusal.kind
        last = self._last.get(kind)
        if last is not None and 0.0 <= now - last < self.period:
            self._since[kind] += 1
            return None
        skipped, self._since[kind] = self._since[kind], 0
        self._last[kind] = now
        more = f" ({skipped} more refused since, not logged)" if skipped else ""
        return f"twist refused ({kind}): {refusal.why}{more}"


@dataclass
class ScopeServoSession:
    """The servo mode over one arthroscopy task (module docstring)."""

    task: ArthroscopyTask
    params: RobotParameters
    dock_tolerance: float = DOCK_TOLERANCE
    servo: RcmServo | None = None  # the running servo; None: the mode is off
    ignored: int = 0  # twists refused (every kind)
    refusals: Counter = field(default_factory=Counter)  # twists refused, by kind
    hold: np.ndarray | None = None  # (5,) the last command, where the scope holds after leaving
    fault: str | None = None  # why the mode left on a fault (None: it did not)
    measured: np.ndarray | None = None  # (5,) the latest measured joints
    _template: RcmServo = field(init=False, repr=False)
    _states: StateAge = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._template = servo_for(self.task, self.params)  # the limits, the model, the docked pose
        self._states = StateAge(self.task.joint_state_timeout)

    @property
    def active(self) -> bool:
        return self.servo is not None

    @property
    def docked_joints(self) -> np.ndarray:
        """(5,) the task's docked pose (the scope `depth` past the portal along `direction`)."""
        return self._template.q.copy()

    def enter(self, now: float) -> tuple[bool, str]:
        """Start the mode at time `now` (s) from the latest measured joints: (started, why)."""
        if self.servo is not None:
            return True, "servo mode already on"
        stale = self._states.fault(now)
        if stale is not None:
            return False, stale
        template = self._template
        q = self.measured
        off = float(axis_distance(q, self.task.portal, template.model))
        if off > self.dock_tolerance:
            return False, (
                f"the scope axis passes {off * 1e3:.2f} mm from the portal (at most "
                f"{self.dock_tolerance * 1e3:.2f} mm): dock the scope first"
            )
        T = forward_kinematics(q, template.model)
        a = T[:3, 2]
        depth = float((T[:3, 3] + template.scope_length * a - self.task.portal) @ a)
        outside = template.outside(a, depth)
        if outside is not None:
            return False, outside
        tool0 = self.task.portal + (depth - template.scope_length) * a
        exact = inverse_kinematics(ApproachTarget(tool0, a), template.model, seed=q)
        inside = template.zone(exact)
        if inside is not None:
            return False, f"the {inside[1]} is in no-go zone {inside[0]}"
        self.servo = RcmServo(
            portal=self.task.portal,
            entry=template.entry,
            scope_length=template.scope_length,
            scope_radius=template.scope_radius,
            body_radius=template.body_radius,
            limits=template.limits,
            model=template.model,
            q=exact,
            zones=template.zones,
        )
        self.hold, self.fault = None, None
        return True, f"servo mode on: the scope {depth * 1e3:.1f} mm past the portal"

    def leave(self) -> tuple[bool, str]:
        """The mode off, the scope held at the last command (`hold`): (left, why)."""
        if self.servo is None:
            return True, "servo mode already off"
        commands, self.hold, self.servo = self.servo.commands, self.servo.q.copy(), None
        return True, f"servo mode off after {commands} commands"

    def _fail(self, fault: str) -> str:
        """Leave and hold on a fault; the fault."""
        self.leave()
        self.fault = fault
        return fault

    @property
    def why_off(self) -> str:
        """Why a twist is ignored now (while the mode is off)."""
        if self.fault is not None:
            return f"the servo mode left on a fault: {self.fault}"
        return "the servo mode is off"

    def measure(self, q: np.ndarray, stamp: float, now: float) -> str | None:
        """The measured joints q (5,) stamped `stamp` (s), received at `now` (s); while on, a scope
        axis measured more than `dock_tolerance` from the portal leaves the mode and holds (a
        fault): why, or None."""
        self.measured = np.asarray(q, dtype=float).copy()
        self._states.measured(stamp, now)
        if self.servo is None:
            return None
        off = float(axis_distance(self.measured, self.task.portal, self.servo.model))
        if off <= self.dock_tolerance:
            return None
        return self._fail(
            f"the measured scope axis passes {off * 1e3:.2f} mm from the portal "
            f"(at most {self.dock_tolerance * 1e3:.2f} mm)"
        )

    def receive(
        self, linear, angular, now: float, stamp: float, frame_id: str = WORLD
    ) -> TwistRefusal | None:
        """A servo command at `now` (s), stamped `stamp` (s) in `frame_id`: None when the servo
        takes it, else why not (counted in `refusals`)."""
        refusal = self._refusal(linear, angular, now, stamp, frame_id)
        if refusal is not None:
            self.ignored += 1
            self.refusals[refusal.kind] += 1
            return refusal
        twist = Twist(np.asarray(linear, dtype=float), np.asarray(angular, dtype=float), min(stamp, now))
        self.servo.receive(twist, now)
        return None

    def _refusal(self, linear, angular, now: float, stamp: float, frame_id: str) -> TwistRefusal | None:
        if self.servo is None:
            return TwistRefusal("off", self.why_off)
        if frame_id not in (WORLD, ""):
            return TwistRefusal("frame", f"frame_id {frame_id[:64]!r} is not {WORLD!r}")
        try:
            Twist(np.asarray(linear, dtype=float), np.asarray(angular, dtype=float), float(stamp))
        except (TypeError, ValueError) as error:
            return TwistRefusal("malformed", " ".join(str(error).split()))
        stale = age_fault("twist", float(stamp), float(now), self.task.timeout)
        return None if stale is None else TwistRefusal("stale", stale)

    def step(self, now: float, dt: float) -> ServoStep | None:
        """The next command (joints (5,) in .q) after dt s at `now` s; None while the mode is off,
        and when the joint states went stale (a fault: `fault` says why, the mode left)."""
        if self.servo is None:
            return None
        stale = self._states.fault(now)
        if stale is not None:
            self._fail(f"joint-state watchdog: {stale}")
            return None
        self._states.elapse(dt)
        return self.servo.step(now, dt)

    def view_cone_markers(self, q: np.ndarray | None = None) -> list[SceneMarker]:
        """The view cone at joints q (5,) (default: the servo's commanded pose; none while off)."""
        if q is None:
            if self.servo is None:
                return []
            q = self.servo.q
        scope = self.params.arthroscope
        cone = view_cone(q, scope.scope_length, scope.field_of_view, self._template.model)
        return view_cone_markers(cone.apex, cone.axis, cone.half_angle, VIEW_DEPTH)
