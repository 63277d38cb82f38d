"""task_node's ROS parameters, each declared once (`quirobot_description.node_parameters`).

task_node declares them through `quirobot_description.ros_parameters.declare_parameters`;
docs/node_parameters.md's table is generated from this one. The timing defaults are
ExecutorConfig's own (the executor's home for them); the node passes the values it was given.
"""

from __future__ import annotations

from dataclasses import fields

from quirobot_control.procedures.drill_hole_types import ExecutorConfig
from quirobot_description.node_parameters import NodeParameter, NodeSchema

__all__ = ["TASK_NODE", "executor_timing"]

_EXECUTOR = {f.name: f.default for f in fields(ExecutorConfig)}

TASK_NODE = NodeSchema(
    "task_node",
    (
        NodeParameter("autostart", "bool", True, "Configure and activate the lifecycle node at start-up."),
        NodeParameter(
            "joint_states_topic",
            "string",
            "/quirobot/joint_states",
            "The measured joint states (sensor_msgs/JointState, drive_node's states_topic).",
        ),
        NodeParameter(
            "task",
            "string",
            "",
            "The scene/task file a DrillHole goal without its own `task` uses (its bone model, no-go "
            'zones), e.g. "incision". Empty or "none": no bone model.',
        ),
        NodeParameter(
            "registration_file",
            "string",
            "",
            "A registration file (`quirobot register --output`) published at start-up as the tf2 static "
            "frame it names (world -> patient), in which DrillHole goals may then be given. Empty: none.",
        ),
        NodeParameter(
            "calibration_file",
            "string",
            "",
            "A calibration file (`quirobot calibrate --output`): DrillHole goals are planned, and the tip "
            "measured, with the calibrated machine's kinematics. Empty: the nominal model.",
        ),
        # Bounds (design assumption): at least 1 Hz, so that the operator's view of a goal's phase
        # and depth is never more than a second old; at most 1000 Hz, the drives' control rate
        # (quirobot.yaml control_rate): faster feedback would repeat the same joint state. The
        # goal's checks do not depend on it: they run every control period (issue 33 item 4).
        NodeParameter(
            "feedback_rate",
            "double",
            1.0 / _EXECUTOR["feedback_period"],
            "Rate of the DrillHole action's feedback (the goal's checks run every control period "
            "whatever this rate).",
            unit="Hz",
            low=1.0,
            high=1000.0,
        ),
        # Bounds (design assumption): at least 50 Hz, so that a cancel or a stop in bone is acted on
        # within 20 ms (0.2 mm at the feed's 10 mm/s velocity limit); at most 1000 Hz, the drives'
        # control rate: checking faster than the controllers' rate sees no new joint state.
        NodeParameter(
            "monitor_rate",
            "double",
            1000.0,
            "Rate at which a running goal is checked (path, cancels, drive stops, lost states): the "
            "controller manager's update rate, at which new joint states arrive (sim.launch.py passes "
            "its controller_rate).",
            unit="Hz",
            low=50.0,
            high=1000.0,
        ),
        NodeParameter(
            "start_delay",
            "double",
            _EXECUTOR["start_delay"],
            "Time between sending a plan to the controllers and its start time (their common stamp).",
            unit="s",
            low=0.0,
            high=60.0,
        ),
        NodeParameter(
            "tracking_lag",
            "double",
            _EXECUTOR["tracking_lag"],
            "The following error the controllers see per unit speed through drive_node: every phase but "
            "the feed and the dwell is slowed so that it stays within their path tolerances.",
            unit="s",
            low=0.0,
            high=1.0,
        ),
        # Bounds (design assumption): up to 0.1 s, 1 mm at the feed's 10 mm/s velocity limit: a
        # longer time-out would let a real deviation run on past the feed's own path tolerance.
        NodeParameter(
            "path_time_out",
            "double",
            _EXECUTOR["path_time_out"],
            "How long (in the joint states' stamps) a joint may stay beyond its path tolerance before "
            "the goal ends (CiA 402's following error time out). 0: at once, as on the robot; "
            "gazebo.launch.py sets one (its controllers' clock jumps under load, see there).",
            unit="s",
            low=0.0,
            high=0.1,
        ),
        NodeParameter(
            "ready_timeout",
            "double",
            _EXECUTOR["ready_timeout"],
            "How long a goal waits for the stack (drives, controllers, joint states, description) to be "
            "ready before it is refused.",
            unit="s",
            low=0.0,
            high=3600.0,
        ),
        # Bounds (design assumption): from the drives' control period (1 ms: a finer sample no
        # controller cycle reads) to 1 s (plausibility: the controllers' spline between samples
        # departs from the plan between them; the path check measures that, it does not rely on it).
        NodeParameter(
            "waypoint_period",
            "double",
            0.01,
            "Time between the plan's samples sent to the controllers as trajectory points (they "
            "interpolate between them).",
            unit="s",
            low=0.001,
            high=1.0,
        ),
    ),
)


def executor_timing(values: dict[str, object]) -> dict[str, float]:
    """ExecutorConfig's timing options from task_node's parameter values (name -> value)."""
    return {
        "feedback_period": 1.0 / float(values["feedback_rate"]),
        "monitor_period": 1.0 / float(values["monitor_rate"]),
        "start_delay": float(values["start_delay"]),
        "tracking_lag": float(values["tracking_lag"]),
        "path_time_out": float(values["path_time_out"]),
        "ready_timeout": float(values["ready_timeout"]),
    }
