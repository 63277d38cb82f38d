"""Procedures: a surgical task from its request to its result, ROS-free, over a motion port.

- drill_hole_executor: `DrillHoleExecutor` (readiness, checks, plan, execution, cancel, result
  with `ErrorCode`); one goal's run in drill_hole_run, the request, feedback, result and settings
  in drill_hole_types, its `MotionPort` in drill_hole_port (task_node: ROS; tests: an in-process
  plant);
- cancel_policy: `CancelPolicy`, what a cancel, an error or a drive stop does in each state;
- path_check: `PathCheck`, each joint state against the plan at the state's own stamp (the goal's
  path tolerance, time-aligned: config/controllers.yaml leaves JTC's unchecked).

Above planning and the control loop, below the simulation and the nodes (.importlinter).
"""

from quirobot_control.procedures.cancel_policy import CancelPolicy
from quirobot_control.procedures.drill_hole_executor import (
    DrillHoleExecutor,
    DrillRequest,
    DrillResult,
    ErrorCode,
    ExecutorConfig,
    MotionPort,
)

__all__ = [
    "CancelPolicy",
    "DrillHoleExecutor",
    "DrillRequest",
    "DrillResult",
    "ErrorCode",
    "ExecutorConfig",
    "MotionPort",
]
