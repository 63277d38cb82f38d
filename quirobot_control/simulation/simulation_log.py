"""What a simulated run records: `SimulationLog` (every control period, SI units), the physics
kept after a stop (`POST_STOP_TIME`) and the plan's drill tip (`planned_tip`).

Filled by simulation.executor_run (the robot's own path: the DrillHole executor, a planned
trajectory or a command stream over the drive bridge); read by the metrics, the plots, the MCAP
recording and the reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from quirobot_control.planning.trajectory import JointTrajectory
from quirobot_control.safety.drilling_monitor import DrillingEvent
from quirobot_control.safety.stop_codes import StopCode
from quirobot_description.parameters import JOINT_NAMES, DrillParameters, RobotParameters
from quirobot_kinematics import KinematicModel, forward_kinematics

__all__ = ["POST_STOP_TIME", "SimulationLog", "planned_tip"]


#: s of physics simulated after a stop (controller stopped, drives quick-stopped, brakes engaging):
#: what the robot does after a stop is part of the run (it coasts, sags or is held), so the log
#: and the metrics keep it. Half a second covers the brakes' 15 ms and the arm coming to rest.
POST_STOP_TIME = 0.5


@dataclass
class SimulationLog:
    """Everything recorded at the control rate; arrays (N, ...) of SI values."""

    names: tuple[str, ...]
    time: np.ndarray  # (N,) s
    position: np.ndarray  # (N, 6) true joint positions
    velocity: np.ndarray  # (N, 6)
    measured: np.ndarray  # (N, 6) encoder positions
    reference: np.ndarray  # (N, 6) planned positions
    current: np.ndarray  # (N, 6) current commands, A
    effort: np.ndarray  # (N, 6) drive efforts, N or N*m
    tip: np.ndarray  # (N, 3) drill tip, world, m (the plant's true tip)
    planned_tip: np.ndarray  # (N, 3) planned drill tip (FK of the plan), m
    tool0: np.ndarray  # (N, 3) tool0, world, m
    planned_tool0: np.ndarray  # (N, 3) planned tool0 (FK of the plan), m
    thrust: np.ndarray  # (N,) bone thrust, N
    controller_time: np.ndarray  # (N,) wall time of read + write, s
    tip_orientation: np.ndarray | None = None  # (N, 4) true drill-tip orientation, quaternion w x y z
    measured_velocity: np.ndarray | None = None  # (N, 6) velocities as the drives report them
    wall_time: float = 0.0  # s for the whole run
    stop_reason: str | None = None
    stop_code: StopCode = StopCode.NONE  # the stop's kind (safety.stop_codes), as the hardware latched it
    events: list[str] = field(default_factory=list)
    stop_time: float | None = None  # s, when the controller stopped; the physics ran on after it
    spindle_speed: np.ndarray | None = None  # (N,) rad/s, with a spindle
    thrust_estimate: np.ndarray | None = None  # (N,) N, the drilling monitor's filtered feed thrust
    drilling_event: DrillingEvent | None = None  # what stopped the feed (drilling monitor), if anything

    @property
    def simulated_time(self) -> float:
        return float(self.time[-1]) if len(self.time) else 0.0


def planned_tip(params: RobotParameters, trajectory: JointTrajectory) -> tuple[np.ndarray, np.ndarray]:
    """(tip, tool0): the planned drill tip and tool0 (N, 3) in the world, m (FK of the plan, the
    feed along tool z)."""
    q = trajectory.positions
    poses = forward_kinematics(q[:, : len(JOINT_NAMES)], KinematicModel.from_parameters(params))
    feed = DrillParameters.feed_index
    tip = poses[:, :3, 3] + poses[:, :3, 2] * q[:, feed : feed + 1]
    return tip, poses[:, :3, 3]
