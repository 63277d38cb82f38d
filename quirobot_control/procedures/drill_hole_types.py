"""The DrillHole executor's data: what a goal asks (`DrillRequest`), what it reports on the way
(`DrillFeedback`) and at its end (`DrillResult`, its `ErrorCode` and `Outcome`), and the executor's
settings (`ExecutorConfig`, `ExecutorConfig.shipped` from the shipped files).

ROS-free; task_node maps them to and from the DrillHole action (nodes/task_node.py), the executor
is procedures.drill_hole_executor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum, IntEnum

import numpy as np

from quirobot_control.planning.drill_hole import DrillGoal
from quirobot_control.planning.tasks import IncisionTask
from quirobot_control.safety.stop_codes import StopCode
from quirobot_description.geometric_errors import Calibration
from quirobot_description.parameters import DrillParameters, RobotParameters, axes_for


class ErrorCode(IntEnum):
    """The DrillHole result's error_code (action/DrillHole.action's constants, same values)."""

    SUCCESS = 0
    REJECTED_INVALID = 1
    REJECTED_LIMIT = 2
    REJECTED_NOT_READY = 3
    ABORTED_FAULT = 4
    ABORTED_MONITOR = 5
    CANCELED_RETRACTED = 6
    CANCELED_BIT_IN_BONE = 7
    REJECTED_FRAME = 8


class Outcome(Enum):
    """The goal's terminal status on the action server."""

    SUCCEEDED = "succeeded"
    CANCELED = "canceled"
    ABORTED = "aborted"


@dataclass(frozen=True)
class DrillRequest:
    goal: DrillGoal
    #: The scene/task file (a name or a path: bone layers, no-go zones), or the task itself (an
    #: in-process caller's: `quirobot simulate` with its depth, feed or bone changed); "": no bone model.
    task: str | IncisionTask = ""
    frames: tuple[str, ...] = ("world", "world")  # frame_id of the entry and the direction
    goal_id: str = ""  # the goal's id (task_node: the action goal's UUID); "": one is made up


@dataclass(frozen=True)
class DrillFeedback:
    phase: str
    depth: float  # m, measured tip past the entry (< 0 above it)
    thrust: float  # N, the feed's measured effort
    lateral_error: float  # m, measured tip from the axis
    progress: float  # 0..1 of the current motion


@dataclass(frozen=True)
class DrillResult:
    outcome: Outcome
    error_code: ErrorCode
    message: str
    achieved_depth: float = float("nan")  # m, deepest measured tip past the entry while in bone
    max_lateral_deviation: float = float("nan")  # m, widest measured tip distance in bone
    bone_model: bool = False
    bit_in_bone: bool = False
    #: The stop that ended or refused the goal (safety.stop_codes; NONE: none, e.g. a success, a
    #: cancel, a goal beyond a limit).
    stop_code: StopCode = StopCode.NONE

    @property
    def success(self) -> bool:
        return self.error_code is ErrorCode.SUCCESS


@dataclass(frozen=True)
class ExecutorConfig:
    params: RobotParameters
    dt: float  # s, the plan's sample period (the control period)
    tolerance: np.ndarray  # (6,) path tolerances, m and rad (config/control.yaml path_tolerance)
    goal_tolerance: np.ndarray  # (6,) the controllers' goal tolerances
    tip: Callable[[np.ndarray], np.ndarray]  # (6,) joint pose -> (3,) drill tip, m (FK)
    base_task: IncisionTask  # what a goal does not say: standoff, approach, dwell, retract rate
    feed_mass: float  # kg, the feed's effective inertia (the drilling monitor's, control.yaml)
    start_delay: float = 2.0  # s between sending a plan and its start time
    tracking_lag: float = 0.05  # s of joint-state lag the slowed phases allow for
    #: s of the states' stamps a joint may stay beyond its path tolerance before the goal ends
    #: (procedures.path_check's time_out; 0: at once, the robot's)
    path_time_out: float = 0.0
    feedback_period: float = 0.02  # s between feedback messages (the checks run every monitor_period)
    #: s between the running goal's checks: the controllers' period, at which joint states arrive
    #: (task_node's monitor_rate); None: every plan sample (dt).
    monitor_period: float | None = None
    states_lost: float = 0.5  # s without joint states that ends a goal
    ready_timeout: float = 300.0  # s a goal waits for the stack (a fresh launch took > 60 s under load)
    response_timeout: float = 10.0  # s a retract or withdraw waits for its acceptance
    client_lost: float = 1.0  # s without any action client that count as a cancel
    #: The machine's calibration (a `quirobot calibrate` file: its identified geometric errors and
    #: the machine they belong to): goals are planned and the tip measured with that machine's
    #: kinematics, on that machine's drives only; None: the nominal model.
    calibration: Calibration | None = None

    @classmethod
    def shipped(
        cls,
        params: RobotParameters | None = None,
        calibration: Calibration | None = None,
        **options: float,
    ) -> ExecutorConfig:
        """From the shipped files: the parameter file (or `params`), the control period and the
        path tolerances (config/control.yaml), the controllers' goal tolerances
        (config/controllers.yaml), the kinematics (calibrated with `calibration` if given) and the
        incision task; `options` override the timing fields (start_delay, tracking_lag, ...)."""
        from quirobot_control.hardware.control_config import control_configuration
        from quirobot_control.planning.drill_hole import path_tolerances
        from quirobot_control.planning.tasks import Kinematics, load_task
        from quirobot_description.data_files import find_data_file
        from quirobot_description.parameters import load_parameters
        from quirobot_description.sourced_yaml import read_yaml_mapping
        from quirobot_kinematics import KinematicModel

        params = params or load_parameters()
        control = control_configuration(params)
        # A ros2_control parameter file (ros__parameters), not a {value, unit, source} one: parsed
        # by the sourced reader's hardened YAML parse (size, depth, duplicate keys), no schema.
        path = find_data_file("config/controllers.yaml")
        controllers = read_yaml_mapping(path, ValueError, "controllers file")
        model = KinematicModel.from_parameters(params)
        return cls(
            params=params,
            dt=control.dt,
            tolerance=np.array([control.joint(name).path_tolerance for name in axes_for("drill")]),
            goal_tolerance=path_tolerances(controllers, kind="goal"),
            tip=Kinematics(model.calibrated(None if calibration is None else calibration.errors)).tip,
            base_task=load_task("incision"),
            feed_mass=control.joint(DrillParameters.feed_joint).effective_inertia,
            calibration=calibration,
            **options,
        )
