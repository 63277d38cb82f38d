"""MCAP log of a simulation, readable by Foxglove and `ros2 bag` (ROS 2 message encoding).

Topics (header.stamp = simulated time from 0):
- /joint_states (sensor_msgs/msg/JointState): every joint incl. drill_feed as the controller
  measured it (encoder positions, the drives' velocity estimates) and the drive efforts, at the
  control rate;
- /quirobot/tip_pose_true (geometry_msgs/msg/PoseStamped): the plant's true drill-tip pose in
  `world` (orientation's z axis = the drilling axis), at the control rate, sampled at the same
  instants as /joint_states, so any tool can recompute the errors from the log;
- /quirobot/planned_trajectory (trajectory_msgs/msg/JointTrajectory): the plan, once, at 100 Hz;
- /quirobot/planned_path and /quirobot/tip_path (nav_msgs/msg/Path): the planned and the actual
  drill tip, once, at 100 Hz, in the `world` frame.
The message definitions (with their dependencies) are embedded as ROS 2 .msg text.
"""

from __future__ import annotations

from pathlib import Path

import mcap_ros2
import numpy as np
from mcap.well_known import SchemaEncoding
from mcap.writer import LIBRARY_IDENTIFIER as MCAP_LIBRARY
from mcap.writer import CompressionType
from mcap.writer import Writer as McapWriter

from quirobot_control.planning.trajectory import JointTrajectory
from quirobot_control.reporting import cdr
from quirobot_control.simulation.simulation_log import SimulationLog

_SEPARATOR = "=" * 80 + "\n"
_TIME = "MSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n"
_DURATION = "MSG: builtin_interfaces/Duration\nint32 sec\nuint32 nanosec\n"
_HEADER = "MSG: std_msgs/Header\nbuiltin_interfaces/Time stamp\nstring frame_id\n"
_POSE = (
    "MSG: geometry_msgs/PoseStamped\nstd_msgs/Header header\ngeometry_msgs/Pose pose\n"
    + _SEPARATOR
    + "MSG: geometry_msgs/Pose\ngeometry_msgs/Point position\ngeometry_msgs/Quaternion orientation\n"
    + _SEPARATOR
    + "MSG: geometry_msgs/Point\nfloat64 x\nfloat64 y\nfloat64 z\n"
    + _SEPARATOR
    + "MSG: geometry_msgs/Quaternion\nfloat64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n"
)

JOINT_STATE = (
    "std_msgs/Header header\nstring[] name\nfloat64[] position\nfloat64[] velocity\nfloat64[] effort\n"
    + _SEPARATOR
    + _HEADER
    + _SEPARATOR
    + _TIME
)
JOINT_TRAJECTORY = (
    "std_msgs/Header header\nstring[] joint_names\nJointTrajectoryPoint[] points\n"
    + _SEPARATOR
    + _HEADER
    + _SEPARATOR
    + _TIME
    + _SEPARATOR
    + "MSG: trajectory_msgs/JointTrajectoryPoint\nfloat64[] positions\nfloat64[] velocities\n"
    "float64[] accelerations\nfloat64[] effort\nbuiltin_interfaces/Duration time_from_start\n"
    + _SEPARATOR
    + _DURATION
)
PATH = (
    "std_msgs/Header header\ngeometry_msgs/PoseStamped[] poses\n" + _SEPARATOR + _HEADER + _SEPARATOR + _TIME
)
PATH += _SEPARATOR + _POSE
#: geometry_msgs/msg/PoseStamped as a top-level message (its definition, then its dependencies).
POSE_STAMPED = (
    "std_msgs/Header header\ngeometry_msgs/Pose pose\n"
    + _SEPARATOR
    + _HEADER
    + _SEPARATOR
    + _TIME
    + _SEPARATOR
    + _POSE.split(_SEPARATOR, 1)[1]
)

#: Decimation of the one-shot plan and path messages (every 10th control sample: 100 Hz).
_PLAN_STRIDE = 10
#: The writer's library field: what mcap_ros2's Writer wrote when it encoded these logs (the
#: messages are encoded here now, reporting.cdr, with the same bytes).
_LIBRARY = f"{MCAP_LIBRARY} mcap-ros2-support/{mcap_ros2.__version__}"


class _Log:
    """An MCAP stream of ROS 2 (CDR) messages: schemas as registered, a channel per topic."""

    def __init__(self, stream) -> None:
        self.writer = McapWriter(
            stream, chunk_size=1024 * 1024, compression=CompressionType.ZSTD, enable_crcs=True
        )
        self.writer.start(profile="ros2", library=_LIBRARY)
        self.channels: dict[str, int] = {}

    def schema(self, datatype: str, definition: str) -> int:
        return self.writer.register_schema(datatype, SchemaEncoding.ROS2, definition.encode())

    def write(self, topic: str, schema: int, data: bytes, time_ns: int, sequence: int = 0) -> None:
        """One message; its topic's channel is registered before its first message."""
        channel = self.channels.get(topic)
        if channel is None:
            channel = self.writer.register_channel(topic=topic, message_encoding="cdr", schema_id=schema)
            self.channels[topic] = channel
        self.writer.add_message(
            channel_id=channel, log_time=time_ns, publish_time=time_ns, sequence=sequence, data=data
        )


def write_mcap(path: str | Path, log: SimulationLog, trajectory: JointTrajectory) -> Path:
    """Write the log and the plan to `path` (.mcap); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    names = list(log.names)
    count = len(log.time)
    measured_velocity = log.velocity if log.measured_velocity is None else log.measured_velocity
    orientation = (
        np.tile([1.0, 0.0, 0.0, 0.0], (count, 1)) if log.tip_orientation is None else log.tip_orientation
    )
    with path.open("wb") as stream:
        mcap = _Log(stream)
        joint_state = mcap.schema("sensor_msgs/msg/JointState", JOINT_STATE)
        joint_trajectory = mcap.schema("trajectory_msgs/msg/JointTrajectory", JOINT_TRAJECTORY)
        nav_path = mcap.schema("nav_msgs/msg/Path", PATH)
        pose_stamped = mcap.schema("geometry_msgs/msg/PoseStamped", POSE_STAMPED)
        stride = slice(None, None, _PLAN_STRIDE)
        plan = cdr.joint_trajectory(
            0.0,
            "world",
            list(trajectory.names),
            trajectory.times[stride].tolist(),
            trajectory.positions[stride].tolist(),
            trajectory.velocities[stride].tolist(),
            trajectory.accelerations[stride].tolist(),
        )
        mcap.write("/quirobot/planned_trajectory", joint_trajectory, plan, 0)
        planned = cdr.path(0.0, "world", log.time[stride].tolist(), log.planned_tip[stride].tolist())
        mcap.write("/quirobot/planned_path", nav_path, planned, 0)
        # The per-period messages, the bulk of the file, encoded for all periods at once.
        stamps = cdr.stamps_ns(log.time)
        states = cdr.joint_state_layout("", names).rows(stamps, log.measured, measured_velocity, log.effort)
        quaternion = np.asarray(orientation)[:, [1, 2, 3, 0]]  # (x, y, z, w)
        poses = cdr.pose_stamped_layout("world").rows(stamps, log.tip, quaternion)
        for k, ns in enumerate(stamps.tolist()):
            mcap.write("/joint_states", joint_state, states[k], ns, sequence=k)
            mcap.write("/quirobot/tip_pose_true", pose_stamped, poses[k], ns, sequence=k)
        end = int(stamps[-1]) if len(stamps) else 0
        actual = cdr.path(0.0, "world", log.time[stride].tolist(), log.tip[stride].tolist())
        mcap.write("/quirobot/tip_path", nav_path, actual, end)
        mcap.writer.finish()
    return path
