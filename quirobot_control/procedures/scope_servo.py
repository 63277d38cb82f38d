"""The arthroscope's servo mode, ROS-free: what scope_servo_node runs (issue 22, item 2).

A session over the RCM servo (planning.remote_centre) with the mode a teleoperator enters and
leaves (scope_servo_node's lifecycle `activate` and `deactivate`; README, "Servo the scope"):

    state  event                         next   what happens
    off    enter(q) docked in the portal on     the servo starts from the measured q, re-solved
    off    enter(q) off the portal/None  off    refused with the reason
    off    receive(twist)                off    ignored and counted; `why_off` says why
    off    step / leave / measure        off    nothing (step gives None)
    on     receive(twist)                on     the servo's latest command (dead-man from it)
    on     step                          on     the next joint command, or a hold (limits,
                                                workspace, no-go zone, dead-man timeout)
    on     leave()                       off    the scope holds at the last command (`hold`)
    on     measure(q) off the portal     off    a fault: held as on leave, `fault` says why

- `enter(q, now)`: the measured joints q (5,) must hold the scope through the task's portal
  within `dock_tolerance` (the surgeon docks the scope by hand or by a planned move first); the
  servo then takes over from that pose, re-solved so that the axis passes through the portal
  exactly. Refused, with the reason, when no joints were measured or the scope is off the portal.
- `receive(linear, angular, now)`: a TwistStamped (world frame, the tip's m/s and rad/s);
  ignored and counted while the mode is off (a stale stream must not move the scope on entering).
- `step(now, dt)`: the next joint command (5,) while the mode is on (None while off), the dead-man
  timeout holding when the stream stops (the servo's own).
- `leave()`: the mode off; `hold` (5,) is the last command, where the scope stays (the node sends
  it once more with zero velocity, the controller holds it).
- `measure(q)`: the measured joints while on; a scope axis measured more than `dock_tolerance`
  from the portal (the knee moved, or the arm does not follow) is a fault: the mode leaves and
  holds, since pivoting on would lever the portal's tissue. Re-entering needs a docked scope.
- `view_cone_markers()`: the scope's view cone (planning.scene) at the servo's pose.

Why the docking check and not a move to the portal here: the servo is for small motions about
the portal; a docking move is a planned trajectory (the DrillHole executor's kind of job).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from quirobot_control.planning.arthroscopy import ArthroscopyTask, servo_for
from quirobot_control.planning.remote_centre import RcmServo, ServoStep, Twist, axis_distance, view_cone
from quirobot_control.planning.scene import SceneMarker, view_cone_markers
from quirobot_description.parameters import RobotParameters
from quirobot_kinematics import ApproachTarget, forward_kinematics, inverse_kinematics

__all__ = ["DOCK_TOLERANCE", "ScopeServoSession", "VIEW_DEPTH"]

#: m: how far from the portal the measured scope axis may pass for the servo mode to start
#: (design assumption: a hand-docked scope sits in its trocar, whose bore is ~1 mm wider).
DOCK_TOLERANCE = 1e-3
#: m: how deep the view cone is drawn past the tip (design assumption: the knee joint's space).
VIEW_DEPTH = 0.03


@dataclass
class ScopeServoSession:
    """The servo mode over one arthroscopy task (module docstring)."""

    task: ArthroscopyTask
    params: RobotParameters
    dock_tolerance: float = DOCK_TOLERANCE
    servo: RcmServo | None = None  # the running servo; None: the mode is off
    ignored: int = 0  # commands received while the mode was off
    hold: np.ndarray | None = None  # (5,) the last command, where the scope holds after leaving
    fault: str | None = None  # why the mode left on a fault (None: it did not)
    _template: RcmServo = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._template = servo_for(self.task, self.params)  # the limits, the model, the docked pose

    @property
    def active(self) -> bool:
        return self.servo is not None

    @property
    def docked_joints(self) -> np.ndarray:
        """(5,) the task's docked pose (the scope `depth` past the portal along `direction`)."""
        return self._template.q.copy()

    def enter(self, q: np.ndarray | None, now: float) -> tuple[bool, str]:
        """Start the mode from the measured joints q (5,) at time `now` (s): (started, why)."""
        if self.servo is not None:
            return True, "servo mode already on"
        if q is None:
            return False, "no joint states measured yet"
        template = self._template
        q = np.asarray(q, dtype=float)
        off = float(axis_distance(q, self.task.portal, template.model))
        if off > self.dock_tolerance:
            return False, (
                f"the scope axis passes {off * 1e3:.2f} mm from the portal (at most "
                f"{self.dock_tolerance * 1e3:.2f} mm): dock the scope first"
            )
        T = forward_kinematics(q, template.model)
        a = T[:3, 2]
        depth = float((T[:3, 3] + template.scope_length * a - self.task.portal) @ a)
        limits = template.limits
        if not limits.min_depth <= depth <= limits.max_depth:
            return False, (
                f"the scope tip is {depth * 1e3:.1f} mm past the portal, outside "
                f"{limits.min_depth * 1e3:.0f}-{limits.max_depth * 1e3:.0f} mm"
            )
        tool0 = self.task.portal + (depth - template.scope_length) * a
        exact = inverse_kinematics(ApproachTarget(tool0, a), template.model, seed=q)
        self.servo = RcmServo(
            portal=self.task.portal,
            scope_length=template.scope_length,
            scope_radius=template.scope_radius,
            limits=limits,
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

    @property
    def why_off(self) -> str:
        """Why a twist is ignored now (while the mode is off)."""
        if self.fault is not None:
            return f"the servo mode left on a fault: {self.fault}"
        return "the servo mode is off"

    def measure(self, q: np.ndarray) -> str | None:
        """The measured joints q (5,); while on, a scope axis measured more than `dock_tolerance`
        from the portal leaves the mode and holds (a fault): why, or None."""
        if self.servo is None:
            return None
        off = float(axis_distance(np.asarray(q, dtype=float), self.task.portal, self.servo.model))
        if off <= self.dock_tolerance:
            return None
        self.leave()
        self.fault = (
            f"the measured scope axis passes {off * 1e3:.2f} mm from the portal "
            f"(at most {self.dock_tolerance * 1e3:.2f} mm)"
        )
        return self.fault

    def receive(self, linear, angular, now: float) -> bool:
        """A servo command; False (and counted in `ignored`) while the mode is off. A malformed
        twist raises ValueError naming the field."""
        twist = Twist(np.asarray(linear, dtype=float), np.asarray(angular, dtype=float), float(now))
        if self.servo is None:
            self.ignored += 1
            return False
        self.servo.receive(twist)
        return True

    def step(self, now: float, dt: float) -> ServoStep | None:
        """The next command (joints (5,) in .q) after dt s at `now` s; None while the mode is off."""
        return None if self.servo is None else self.servo.step(now, dt)

    def view_cone_markers(self, q: np.ndarray | None = None) -> list[SceneMarker]:
        """The view cone at joints q (5,) (default: the servo's commanded pose; none while off)."""
        if q is None:
            if self.servo is None:
                return []
            q = self.servo.q
        scope = self.params.arthroscope
        cone = view_cone(q, scope.scope_length, scope.field_of_view, self._template.model)
        return view_cone_markers(cone.apex, cone.axis, cone.half_angle, VIEW_DEPTH)
