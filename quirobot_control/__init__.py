"""QUIROBOT's control: models, drives, the hardware component, safety, planning, simulation, bridge.

Subpackages, bottom up (a module imports only from its own layer or below; .importlinter):

- axes: the commanded axes' limits (`JointLimits`, the mounted tool's axes);
- models: rigid body and dynamics, motor, transmission, encoder, bone;
- drives: the `Drive` interface, the drive-side law, the CiA 402 tables, the CANopen master
  (`CanopenDrive`): the real-drive path;
- drive_simulators: `SimulatedDrive` and the simulated CiA 402 slave (never on the real-drive
  path); safety: the per-cycle safety monitor, the drilling monitor, the breakthrough plan check;
- hardware: the hardware component (`QuirobotHardware`), homing, control configuration;
  planning: jerk-limited trajectories and the surgical tasks, the plan's virtual-fixture check;
- procedures: a surgical procedure from its request to its result over a motion port (the
  DrillHole executor that task_node drives; its cancel policy);
- simulation: the MuJoCo plant, the closed loop, a task run and measured, the simulated drive
  backend; analysis: servo sizing, the single-joint step response;
- bridge: the drive bridge under drive_node (simulated or CANopen backend); reporting: MCAP log
  and PNG summary of a run;
- nodes: the ROS 2 nodes (drive_node, task_node), thin adapters.

Conveniences with the shipped parameter file by default (`params=` takes another's
RobotParameters, e.g. `quirobot_description.robot_parameters("other.yaml")`):

- `inverse_dynamics(q, qd, qdd)`: joint efforts (5,) or (N, 5), N and N*m;
- `plan("incision")`: the task's whole JointTrajectory at the control rate;
- `simulate("incision")`: plan and run it in closed loop, a TaskResult with metrics.

Imports are deferred so that `import quirobot_control` stays light (MuJoCo loads on first use).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from quirobot_control.models.dynamics import Dynamics
    from quirobot_control.planning.tasks import IncisionTask, LineTask
    from quirobot_control.planning.trajectory import JointTrajectory
    from quirobot_control.simulation.incision import TaskResult
    from quirobot_description.parameters import RobotParameters

__all__ = ["inverse_dynamics", "plan", "simulate"]


def _parameters(params: RobotParameters | None) -> RobotParameters:
    from quirobot_description import robot_parameters

    return params if params is not None else robot_parameters()


@functools.lru_cache(maxsize=1)
def _shipped_dynamics() -> Dynamics:
    from quirobot_control.models.dynamics import Dynamics

    return Dynamics(_parameters(None))


def inverse_dynamics(
    q: object, qd: object, qdd: object, *, friction: bool = True, params: RobotParameters | None = None
) -> np.ndarray:
    """Joint efforts (5,) or (N, 5) (N, N*m) for q, qd, qdd (5,) or (N, 5): gravity, inertia,
    Coriolis and (with `friction`) viscous friction, by recursive Newton-Euler."""
    from quirobot_control.models.dynamics import Dynamics

    dynamics = _shipped_dynamics() if params is None else Dynamics(params)
    return dynamics.inverse_dynamics(q, qd, qdd, friction=friction)


def plan(
    task: str | IncisionTask | LineTask = "incision", *, params: RobotParameters | None = None
) -> JointTrajectory:
    """The task's whole trajectory (6 joints, drill feed last) at the control rate of config/control.yaml.

    task: incision, line, a path to a task YAML file, or a loaded task (quirobot_control.planning.tasks).
    """
    from quirobot_control.hardware.control_config import control_configuration
    from quirobot_control.planning.tasks import IncisionTask, load_task, plan_incision, plan_line_task

    params = _parameters(params)
    if isinstance(task, (str, Path)):
        task = load_task(task)
    dt = control_configuration(params).dt
    return (
        plan_incision(task, params, dt)
        if isinstance(task, IncisionTask)
        else plan_line_task(task, params, dt)
    )


def simulate(
    task: str | Path | IncisionTask | LineTask = "incision",
    *,
    params: RobotParameters | None = None,
    depth: float | None = None,
    feed_rate: float | None = None,
    plant: str | None = None,
) -> TaskResult:
    """Plan the task and run it in closed loop (planner, IK, PID, drives, MuJoCo): a TaskResult
    whose `metrics` (simulation.metrics.TaskMetrics) hold the errors (m) and whose `log` holds
    every 1 kHz sample.

    depth, feed_rate: override an incision's (m, m/s). plant: "realistic" or "ideal" (default
    plant_parameters.DEFAULT_PLANT, as `quirobot simulate`).
    """
    from quirobot_control.planning.tasks import load_task
    from quirobot_control.simulation.incision import run_task
    from quirobot_description.plant_parameters import DEFAULT_PLANT

    if isinstance(task, (str, Path)):
        task = load_task(task)
    return run_task(task, _parameters(params), depth=depth, feed_rate=feed_rate, plant=plant or DEFAULT_PLANT)
