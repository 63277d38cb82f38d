"""Simulation: the control loop on simulated drives and the MuJoCo rigid-body plant.

- plant: `MujocoPlant`, the robot's physics (the exported URDF in MuJoCo), stepped one control
  period at a time with the drives' efforts and an optional force at the drill tip;
- executor_run: the robot's own path in-process (the DrillHole executor, a planned trajectory or
  a servo's live command stream, over the drive bridge on the simulated backend: bridge_port),
  recorded in a `SimulationLog`: what `quirobot simulate` runs for every procedure;
- simulation_log: `SimulationLog`, what a run records every control period, and
  `POST_STOP_TIME`, the physics kept after a stop;
- bone_contact: `Drilling` (the bone on the drilling axis) and `BoneContact`, its thrust on the
  bit in the plant;
- incision: `run_task(task, params)`, a task planned and run, measured against the targets
  (`TaskResult`, `targets_met`), with the drilling monitor and spindle;
- metrics: `TaskMetrics` (`RunMetrics`, `IncisionMetrics`, `LineMetrics`), a run's typed
  metrics with units, and `as_dict()`, the JSON `quirobot simulate --json` prints;
- faults: `Injection` (master-loss, drive-fault, estop, bone-harder, spindle-stall) injected into
  a run, the fault and breakthrough reports and the safety verdict (`quirobot simulate --inject`);
- simulated_backend: `SimulatedBackend`, the drive bridge's drives on the plant, and
  `simulated_bridge`, the drive bridge on it (drive_node's drive_backend:=simulated).

`quirobot_control.simulate("incision")` is the one-call version.
"""

from quirobot_control.simulation.bone_contact import Drilling
from quirobot_control.simulation.incision import TaskResult, run_task, targets_met
from quirobot_control.simulation.metrics import TaskMetrics
from quirobot_control.simulation.plant import MujocoPlant, SimulationError
from quirobot_control.simulation.simulated_backend import SimulatedBackend, simulated_bridge
from quirobot_control.simulation.simulation_log import SimulationLog

__all__ = [
    "Drilling",
    "MujocoPlant",
    "SimulatedBackend",
    "SimulationError",
    "SimulationLog",
    "TaskMetrics",
    "TaskResult",
    "run_task",
    "simulated_bridge",
    "targets_met",
]
