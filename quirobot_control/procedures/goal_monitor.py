"""The drilling monitor's settings for one hole: the goal's thrust limit, never above the robot's.

`monitor_settings_for_goal(max_thrust, far_cortex_depth, params, control)` -> DrillingMonitorSettings
(safety.drilling_monitor): the parameter file's process-safety settings with

- thrust_limit = min(max_thrust, tools.drill.thrust_limit): the goal's limit (DrillHole's
  `max_thrust`, DrillingContext's on the ROS path) is enforced during the feed, and a goal can
  only lower the robot's own limit, never raise it;
- breakthrough detection armed before `far_cortex_depth` (m below the entry; None: no far
  cortex to detect).

One function for every caller that drills a goal: `quirobot simulate` (simulation.incision),
the DrillHole executor and drive_node (from msg/DrillingContext). It lives in the control loop,
not in planning, so the real-drive path (drive_node) may use it.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import replace

from quirobot_control.hardware.control_config import ControlConfig
from quirobot_control.safety.drilling_monitor import DrillingMonitorSettings
from quirobot_description.parameters import DrillParameters, RobotParameters


class GoalLimitError(ValueError):
    """A goal's thrust limit that is not a positive finite number of newtons."""


def monitor_settings_for_goal(
    max_thrust: float,
    far_cortex_depth: float | None,
    params: RobotParameters,
    control: ControlConfig,
) -> DrillingMonitorSettings:
    """The drilling monitor's settings for a goal allowing `max_thrust` N (see the module doc).
    GoalLimitError if max_thrust is not a finite number > 0 (NaN would disable the limit)."""
    real = isinstance(max_thrust, numbers.Real) and not isinstance(max_thrust, bool)
    value = float(max_thrust) if real else math.nan
    if not (math.isfinite(value) and value > 0.0):
        raise GoalLimitError(f"max_thrust must be a finite number > 0 N, got {max_thrust!r}")
    safety = params.drilling.safety
    settings = DrillingMonitorSettings.from_parameters(
        safety,
        params.drill,
        params.drilling.spindle,
        control.joint(DrillParameters.feed_joint).effective_inertia,
        far_cortex_depth,
    )
    return replace(settings, thrust_limit=min(value, safety.thrust_limit))
