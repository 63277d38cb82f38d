"""The drive side of a stack whose joints are Gazebo's (gz_ros2_control), for task_node (ROS-free).

task_node drives whatever answers as drive_node does: the drives' state (msg/DrivesState: enabled,
homed, the latched stop, the hole in force) and a hole taken for each DrillHole goal before it
moves (msg/DrillingContext). On Gazebo there are no drives: gz_ros2_control's position
interfaces move the joints, absolute from the start. `GazeboDrives` is that drive side's state:

- enabled from the start (the controllers are what takes commands), `disable` / `enable` as the
  operator's switch (a disabled stack refuses goals, as with drives; Gazebo's joints keep
  following their controllers, which have nothing to follow);
- homed always (Gazebo's joint positions are absolute); no stop is ever latched (nothing on
  Gazebo trips a drive);
- a hole: one goal's at a time, as `bridge.hole_in_force` takes it (another goal's active, a
  context naming another goal: refused with the reason). Gazebo models no drilling thrust, so a
  hole with a bone model is refused, saying so: its far cortex's breakthrough could not be seen
  (as a plan whose breakthrough the monitor would not see is refused) nor its thrust fed
  forward. A calibrated hole is refused too (no drive serial numbers to check its machine
  against). A hole without either is taken: the feed goes to the planned depth (the thrust-only
  breakthrough detection of a hole without a bone model has no thrust to see), and what is not
  watched is said in its text (`UNWATCHED`).

gazebo_drives_node is the ROS adapter (nodes.gazebo_drives_node).
"""

from __future__ import annotations

from dataclasses import dataclass

from quirobot_control.safety.hole_context import HoleContext

__all__ = ["PATH_TIME_OUT", "UNWATCHED", "GazeboDrives", "GazeboDrivesState", "HoleRefusedError"]

#: What the drive side does not watch on Gazebo, in every hole's text.
UNWATCHED = (
    "Gazebo models no drilling thrust: no thrust limit, spindle or breakthrough monitor, no thrust "
    "feed-forward, and no drive-side virtual fixtures or command watchdog (gz_ros2_control has no "
    "safety layer); the controllers' path tolerances and task_node's checks still apply"
)


#: s: task_node's path_time_out on Gazebo (gazebo.launch.py; procedures.path_check). ros2_control
#: hands the controllers the controller manager node's copy of /clock, not the physics step's time
#: (ros2_control#2046; measured: consecutive controller states of one stamp whose joints had
#: moved), so under load their clock freezes and jumps: a jump of J s moves the reference v * J at
#: once (a loaded goal aborted at 2.3 mm, 1 mm tolerance, at 10 mm/s: J about 0.23 s).
#: gz_ros2_control's position loop (controllers_gazebo.yaml: gain 0.5 per 1 ms step) halves the
#: step every physics step, so a step of 2**k tolerances caught up at once is back within
#: tolerance after k + 1 steps (test_path_check checks a 0.3 s jump). But the clock may catch up
#: over several steps, each a further jump, while the stamps run ahead faster than physics: a
#: loaded run with a 10 ms time-out aborted at 3.5 mm, beyond the tolerance for 14 ms of stamps.
#: The loop closes a step only with speed to spare: in Gazebo the joints' velocity limits are the
#: drives' top speeds, not the design limits the plans cruise at (urdf/common.xacro; before, a lag
#: during a 1 m/s cruise held for the whole time-out). With them, a clean-clone CI run's loaded
#: goal still aborted at 50 ms: gantry_x 3.6 mm off its plan, beyond the tolerance for 57 ms of
#: stamps (1 in 8 loaded runs since the velocity limits). 100 ms, task_node's upper bound for
#: path_time_out, covers it with a margin of 1.75 and lets a real deviation run on 100 ms more (1 mm
#: at the 10 mm/s of the slowed approach and of the feed's velocity limit).
PATH_TIME_OUT = 0.1


class HoleRefusedError(ValueError):
    """A drilling context the Gazebo drive side does not take; nothing changed."""


@dataclass(frozen=True)
class GazeboDrivesState:
    """msg/DrivesState's fields (see there), as the Gazebo drive side has them."""

    lifecycle: str
    enabled: bool
    commanded: bool
    homed: bool
    hole_goal_id: str
    hole_refused_goal_id: str
    hole_refused: str
    hole_unwatched: str  # UNWATCHED while a hole is in force


class GazeboDrives:
    """The Gazebo drive side's state (module doc); every change returns a line for the log."""

    def __init__(self) -> None:
        self.enabled = True
        self.hole: str | None = None  # the goal whose hole is in force
        self.refused: tuple[str, str] | None = None  # (goal, why) of the last hole refused

    def state(self) -> GazeboDrivesState:
        goal, why = self.refused or ("", "")
        return GazeboDrivesState(
            lifecycle="active" if self.enabled else "inactive",
            enabled=self.enabled,
            commanded=self.enabled,
            homed=True,
            hole_goal_id=self.hole or "",
            hole_refused_goal_id=goal,
            hole_refused=why,
            hole_unwatched=UNWATCHED if self.hole else "",
        )

    def enable(self) -> str:
        if self.enabled:
            return "already enabled"
        self.enabled = True
        return "enabled (Gazebo: the controllers' commands reach the joints)"

    def disable(self) -> str:
        if not self.enabled:
            return "already disabled"
        self.enabled = False
        self.hole = None
        return (
            "disabled: goals are refused until enable (Gazebo's joints hold their controllers' last targets)"
        )

    def home(self) -> str:
        return "Gazebo's joint positions are absolute: nothing to home"

    def acknowledge_stop(self) -> str:
        return "no stop latched (nothing on Gazebo trips a drive)"

    def set_drilling_context(self, goal_id: str, context: HoleContext | None) -> str:
        """Goal `goal_id`'s hole `context` in force (None: that goal's hole ends); the text of what
        is in force. HoleRefusedError, nothing changed, for a hole this drive side cannot run (module
        doc); the refusal is kept for its goal to see (`state().hole_refused`)."""
        if context is None:
            if self.hole is None:
                return f"drilling context: goal {goal_id!r} ended, no hole was active"
            if self.hole != goal_id:
                raise HoleRefusedError(
                    f"end of goal {goal_id!r}'s drilling context refused: the active hole is goal "
                    f"{self.hole!r}'s"
                )
            self.hole = None
            return f"drilling context: goal {goal_id!r}'s hole ended"
        try:
            self._check(goal_id, context)
        except HoleRefusedError as error:
            self.refused = (goal_id, str(error))
            raise
        self.hole = goal_id
        return (
            f"drilling context: goal {goal_id!r}'s hole in force ({context.depth * 1e3:.2f} mm at "
            f"{context.feed_rate * 1e3:.2f} mm/s). {UNWATCHED}"
        )

    def _check(self, goal_id: str, context: HoleContext) -> None:
        refused = f"drilling context of goal {goal_id!r} refused"
        if context.goal_id != goal_id:
            raise HoleRefusedError(f"drilling context names goal {context.goal_id!r}, sent for {goal_id!r}")
        if not self.enabled:
            raise HoleRefusedError(f"{refused}: the Gazebo drive side is disabled (enable first)")
        if self.hole is not None and self.hole != goal_id:
            raise HoleRefusedError(
                f"{refused}: goal {self.hole!r}'s hole is active (a hole belongs to one goal and "
                "cannot change while it runs)"
            )
        if context.bone is not None:
            raise HoleRefusedError(
                f"{refused}: it has a bone model, and Gazebo models no drilling thrust: neither the "
                "far cortex's breakthrough nor the bone's thrust can be seen or fed forward here; "
                "drill without a bone model (a goal with no task, task_node's task empty)"
            )
        if context.calibration is not None:
            raise HoleRefusedError(
                f"{refused}: a calibrated hole needs the drives' serial numbers to check its machine, "
                "and Gazebo has no drives"
            )
