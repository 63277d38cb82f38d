"""Simulation: the control loop on simulated drives and the MuJoCo rigid-body plant.

- plant: `MujocoPlant`, the robot's physics (the exported URDF in MuJoCo), stepped one control
  period at a time with the drives' efforts and an optional force at the drill tip;
- executor_run: the robot's own path in-process (the DrillHole executor, a planned trajectory or
  a servo's live command stream, over the drive bridge on the simulated backend: bridge_port),
  recorded in a `SimulationLog`: what `quirobot simulate` runs for every procedure;
- closed_loop: `SimulationLog`, and `ClosedLoopSimulation`, the older loop of a planned trajectory
  (hardware component, PIDs, safety, drives, plant, bone thrust while `Drilling`): no procedure
  runs it any more (issue 31), only its own tests;
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

from quirobot_control.simulation.closed_loop import ClosedLoopSimulation, Drilling, SimulationLog
from quirobot_control.simulation.incision import TaskResult, run_task, targets_met
from quirobot_control.simulation.metrics import TaskMetrics
from quirobot_control.simulation.plant import MujocoPlant, SimulationError
from quirobot_control.simulation.simulated_backend import SimulatedBackend, simulated_bridge

__all__ = [
    "ClosedLoopSimulation",
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
