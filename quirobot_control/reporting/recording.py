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

import numpy as np
from mcap_ros2.writer import Writer

from quirobot_control.planning.trajectory import JointTrajectory
from quirobot_control.simulation.closed_loop import SimulationLog

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


def _stamp(t: float) -> dict[str, int]:
    ns = int(round(t * 1e9))
    return {"sec": ns // 1_000_000_000, "nanosec": ns % 1_000_000_000}


def _pose_stamped(position: np.ndarray, quaternion: np.ndarray, t: float) -> dict:
    """PoseStamped in `world`: position (3,) m, quaternion (4,) w x y z."""
    w, x, y, z = (float(v) for v in quaternion)
    return {
        "header": {"stamp": _stamp(t), "frame_id": "world"},
        "pose": {
            "position": {"x": float(position[0]), "y": float(position[1]), "z": float(position[2])},
            "orientation": {"x": x, "y": y, "z": z, "w": w},
        },
    }


def _path(points: np.ndarray, times: np.ndarray) -> dict:
    return {
        "header": {"stamp": _stamp(0.0), "frame_id": "world"},
        "poses": [
            {
                "header": {"stamp": _stamp(float(t)), "frame_id": "world"},
                "pose": {
                    "position": {"x": float(p[0]), "y": float(p[1]), "z": float(p[2])},
                    "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0},
                },
            }
            for p, t in zip(points, times, strict=True)
        ],
    }


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
        writer = Writer(stream)
        joint_state = writer.register_msgdef("sensor_msgs/msg/JointState", JOINT_STATE)
        joint_trajectory = writer.register_msgdef("trajectory_msgs/msg/JointTrajectory", JOINT_TRAJECTORY)
        nav_path = writer.register_msgdef("nav_msgs/msg/Path", PATH)
        pose_stamped = writer.register_msgdef("geometry_msgs/msg/PoseStamped", POSE_STAMPED)
        stride = slice(None, None, _PLAN_STRIDE)
        plan = {
            "header": {"stamp": _stamp(0.0), "frame_id": "world"},
            "joint_names": list(trajectory.names),
            "points": [
                {
                    "positions": p.tolist(),
                    "velocities": v.tolist(),
                    "accelerations": a.tolist(),
                    "effort": [],
                    "time_from_start": _stamp(float(t)),
                }
                for p, v, a, t in zip(
                    trajectory.positions[stride],
                    trajectory.velocities[stride],
                    trajectory.accelerations[stride],
                    trajectory.times[stride],
                    strict=True,
                )
            ],
        }
        writer.write_message(
            "/quirobot/planned_trajectory", joint_trajectory, plan, log_time=0, publish_time=0
        )
        writer.write_message(
            "/quirobot/planned_path",
            nav_path,
            _path(log.planned_tip[stride], log.time[stride]),
            log_time=0,
            publish_time=0,
        )
        for k, t in enumerate(log.time):
            ns = int(round(float(t) * 1e9))
            message = {
                "header": {"stamp": _stamp(float(t)), "frame_id": ""},
                "name": names,
                "position": log.measured[k].tolist(),
                "velocity": measured_velocity[k].tolist(),
                "effort": log.effort[k].tolist(),
            }
            writer.write_message(
                "/joint_states", joint_state, message, log_time=ns, publish_time=ns, sequence=k
            )
            writer.write_message(
                "/quirobot/tip_pose_true",
                pose_stamped,
                _pose_stamped(log.tip[k], orientation[k], float(t)),
                log_time=ns,
                publish_time=ns,
                sequence=k,
            )
        end = int(round(float(log.time[-1]) * 1e9)) if len(log.time) else 0
        writer.write_message(
            "/quirobot/tip_path",
            nav_path,
            _path(log.tip[stride], log.time[stride]),
            log_time=end,
            publish_time=end,
        )
        writer.finish()
    return path
