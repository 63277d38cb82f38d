"""Axis limits: the bottom layer of quirobot_control (numpy only).

The commanded axes are the mounted tool's, `axes_for(tool)` of quirobot_description.parameters:
the arm's five joints, then the tool's own (the drill feed; the arthroscope has none).
`JointLimits.from_parameters(params, axes)` holds their hard and soft ranges, velocity,
acceleration and jerk bounds and the safety controllers' k_position, arrays (n,) in SI units
(default the drill's six axes). The planner keeps its motions inside them, the safety layer enforces them.

- limits: `JointLimits`, `PlanningError` (a refused motion, naming the joint and the amount);
- virtual_fixtures: Cartesian no-go zones (`NoGoZone` box or capsule, world frame) and the
  tip-speed limit near the entry (`EntrySpeedLimit`) on the tool's segments (`ToolGeometry`):
  the plan check (planning.fixture_check) and the per-cycle check (fixture_monitor.`FixtureMonitor`, in the
  hardware component) share this geometry. Built on quirobot_kinematics' closed-form FK.
"""

from quirobot_control.axes.limits import JointLimits, PlanningError

__all__ = ["JointLimits", "PlanningError"]
