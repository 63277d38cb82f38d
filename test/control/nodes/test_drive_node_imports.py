"""drive_node's real-robot path (drive_backend:=canopen) loads neither MuJoCo nor the planner (ruckig),
nor matplotlib or pinocchio, nor any drive simulator.

A fresh interpreter imports the node and the CANopen backend and builds the canopen path as
drive_node does (parameters, control configuration, the robot description, the bridge) up to
opening the first bus, which fails on an interface that does not exist; then it lists which of
mujoco, ruckig, matplotlib and pinocchio are loaded. The simulated backend, run the same way,
is the control: it must load MuJoCo (else the check could not fail). .importlinter's
real-drive-path contract says the same of every import statement.
"""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import json, sys, time
import quirobot_control.bridge.canopen_backend
import quirobot_control.nodes.drive_node
from quirobot_control.bridge.canopen_backend import CanBusConfig
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.bridge.backend import DriveStartupError
from quirobot_control.bridge.drive_bridge import open_bridge
from quirobot_control.hardware.hardware_info import hardware_info_from_urdf
from quirobot_description.parameters import load_parameters
from quirobot_description.urdf import robot_description

params = load_parameters()
control = control_configuration(params)
backend = sys.argv[1]
stopped_at = None
description = robot_description("drill", "real")
try:
    if backend == "canopen":  # as drive_node opens each (its composition root)
        from quirobot_control.bridge.canopen_backend import CanopenBackend

        joints = [joint.name for joint in hardware_info_from_urdf(description).joints]
        drives = CanopenBackend(params, control, CanBusConfig("no-such-interface"), joints=joints)
        bridge = open_bridge(drives, params, control, description, now=time.monotonic())
    else:
        from quirobot_control.simulation.simulated_backend import simulated_bridge

        bridge = simulated_bridge(params, control, description, now=time.monotonic())
    bridge.close()
except DriveStartupError as error:
    stopped_at = str(error)
engines = ("mujoco", "ruckig", "matplotlib", "pinocchio")
simulators = sorted(
    m for m in sys.modules
    if m.startswith(("quirobot_control.drive_simulators", "quirobot_control.simulation"))
)
print(json.dumps({
    "stopped_at": stopped_at, "loaded": [m for m in engines if m in sys.modules], "simulators": simulators,
}))
"""


def run(backend: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, backend], capture_output=True, text=True, timeout=300, check=True
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_canopen_path_loads_neither_mujoco_nor_ruckig():
    report = run("canopen")
    assert report["stopped_at"].startswith("CAN bus can0 (no-such-interface channel can0): cannot open")
    assert report["loaded"] == []


def test_importing_drive_node_loads_no_simulator():
    """Issue 20: the real-drive path imports no simulator module (the drive simulators, the
    simulation package), however far it gets; the simulated backend is the control."""
    assert run("canopen")["simulators"] == []
    simulated = run("simulated")["simulators"]
    assert "quirobot_control.drive_simulators.simulated_drive" in simulated, simulated


def test_the_simulated_path_loads_mujoco():
    report = run("simulated")
    assert report["stopped_at"] is None
    assert "mujoco" in report["loaded"]
