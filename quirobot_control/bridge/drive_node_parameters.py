"""drive_node's ROS parameters, each declared once (`quirobot_description.node_parameters`).

drive_node declares them through `quirobot_description.ros_parameters.declare_parameters`;
docs/node_parameters.md's table is generated from this one. Defaults that are facts of the core
come from their home (DRIVE_BACKENDS, DEFAULT_STOPPED_CONTROLLERS, Lockstep's guards).
"""

from __future__ import annotations

from dataclasses import fields

from quirobot_control.bridge.controller_stopper import DEFAULT_STOPPED_CONTROLLERS
from quirobot_control.bridge.drive_bridge import DRIVE_BACKENDS
from quirobot_control.bridge.lockstep import Lockstep
from quirobot_description.machine_identity import MAX_SIMULATED_SEED
from quirobot_description.node_parameters import NodeParameter, NodeSchema
from quirobot_description.plant_parameters import PLANTS

__all__ = ["DRIVE_NODE"]

_LOCKSTEP = {f.name: f.default for f in fields(Lockstep)}

DRIVE_NODE = NodeSchema(
    "drive_node",
    (
        NodeParameter(
            "robot_description",
            "string",
            "",
            "The URDF XML (as the launch file gives robot_state_publisher); its ros2_control block "
            "names the joints and so the drives. Empty: wait for the latched /robot_description topic.",
        ),
        NodeParameter(
            "commands_topic",
            "string",
            "/quirobot/joint_commands",
            "The controllers' commands (sensor_msgs/JointState), as in the URDF's ros2_control block.",
        ),
        NodeParameter(
            "states_topic",
            "string",
            "/quirobot/joint_states",
            "The joint states published at the control rate, as in the URDF's ros2_control block.",
        ),
        NodeParameter(
            "drive_backend",
            "string",
            DRIVE_BACKENDS[0],
            "simulated: SimulatedDrives on the MuJoCo plant; canopen: the CiA 402 servo drives on the "
            "CAN buses of the parameter file (canopen.channels), the bus cycle in its own thread.",
            choices=DRIVE_BACKENDS,
        ),
        NodeParameter(
            "can_interface", "string", "socketcan", "python-can interface of the CAN buses (canopen backend)."
        ),
        NodeParameter(
            "can_channels",
            "string",
            "",
            'bus=channel pairs for buses whose channel is not their own name, e.g. "can0=vcan0,can1=vcan1" '
            "(canopen backend). Empty: none.",
        ),
        NodeParameter(
            "simulated_bone",
            "string",
            "",
            "Simulated backend: this task's bone in the plant (its thrust on the drill tip), "
            'e.g. "incision". Empty or "none": no bone.',
        ),
        NodeParameter(
            "plant",
            "string",
            PLANTS[0],
            "Simulated backend: ideal (MuJoCo's rigid bodies, the controller's own model) or realistic "
            "(gearbox backlash and windup, compliances, delay, noise, cutting forces) run with the "
            "compensation `quirobot simulate --plant realistic` gives it: the host's PID on the load-side "
            "wrist encoders and the bone's thrust fed forward.",
            choices=PLANTS,
        ),
        NodeParameter(
            "simulated_machine",
            "integer",
            -1,
            "Simulated backend: which simulated machine the drives are (quirobot_description."
            "machine_identity: their serial numbers, which a calibration must name, and on the realistic "
            "plant its geometric errors): the seed `quirobot calibrate --seed` draws it with; -1: the "
            "nominal machine.",
            unit="1",
            low=-1,
            high=MAX_SIMULATED_SEED,
        ),
        NodeParameter(
            "test_fault_injection",
            "bool",
            False,
            "Simulated backend, tests only: adds the service ~/inject_fault (std_srvs/Trigger) that faults "
            "the drill feed's drive.",
        ),
        NodeParameter(
            "publish_clock",
            "bool",
            False,
            "Simulated backend: publish /clock and run the plant in lock-step with the controller manager "
            "(sim.launch.py); false: the plant follows the wall clock.",
        ),
        # Bounds (design assumption): 0 (the drives' rate) or a rate that divides the drives'
        # control rate, so never above it (checked at start-up against the parameter file's
        # control_rate, bridge.lockstep.substeps_per_command, which refuses any other); 10 kHz, the
        # schema's plausibility bound: ten times the shipped 1 kHz, which the parameter file may raise.
        NodeParameter(
            "controller_rate",
            "integer",
            0,
            "publish_clock: the controller manager's update_rate (bringup.launch.py's controller_rate); "
            "the plant runs the drives' control rate divided by it, whole periods per command "
            "(bridge.lockstep), the command's velocity carrying its position between them. "
            "0: the drives' own control rate.",
            unit="Hz",
            low=0,
            high=10000,
        ),
        NodeParameter(
            "lockstep_timeout",
            "double",
            _LOCKSTEP["dead_after"],
            "publish_clock: wall time without a command after which the controller manager counts as "
            "dead: every drive stops and the plant runs on the wall clock until commands come back. "
            "Must exceed lockstep_republish.",
            unit="s",
            low=0.1,
            high=600.0,
        ),
        NodeParameter(
            "lockstep_republish",
            "double",
            _LOCKSTEP["republish_after"],
            "publish_clock: wall time without a command after which /clock is sent again (a lost "
            "best-effort sample); before the first command, the wall time per plant period.",
            unit="s",
            low=0.001,
            high=10.0,
        ),
        NodeParameter(
            "homing",
            "bool",
            False,
            "Simulated backend: drives with incremental encoders, not homed at start-up (enable is refused "
            "until /quirobot/drives/home has run); false: absolute encoders, homed.",
        ),
        NodeParameter(
            "stop_controllers",
            "string_array",
            DEFAULT_STOPPED_CONTROLLERS,
            "The controllers deactivated through /controller_manager/switch_controller when the drives stop "
            "or are disabled, reactivated by /quirobot/drives/enable.",
        ),
    ),
)
