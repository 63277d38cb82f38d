"""The log's CDR encoder (reporting.cdr) against mcap_ros2's own encoder, byte for byte, and the
simulation log written with it read back by mcap_ros2's decoder."""

from __future__ import annotations

import io

import numpy as np
import pytest
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from mcap_ros2.writer import Writer

from quirobot_control.planning.trajectory import JointTrajectory
from quirobot_control.reporting import cdr
from quirobot_control.reporting.recording import JOINT_STATE, JOINT_TRAJECTORY, PATH, POSE_STAMPED, write_mcap
from quirobot_control.simulation.simulation_log import SimulationLog

RNG = np.random.default_rng(7)


def _mcap_ros2_bytes(datatype: str, definition: str, message: dict) -> bytes:
    """The CDR bytes mcap_ros2's Writer produces for `message`."""
    stream = io.BytesIO()
    writer = Writer(stream)
    writer.write_message("/topic", writer.register_msgdef(datatype, definition), message, log_time=0)
    writer.finish()
    stream.seek(0)
    return next(make_reader(stream).iter_messages())[2].data


def _time(t: float) -> dict:
    sec, nanosec = cdr.stamp(t)
    return {"sec": sec, "nanosec": nanosec}


def _pose(t: float, frame: str, p, q) -> dict:
    return {
        "header": {"stamp": _time(t), "frame_id": frame},
        "pose": {
            "position": dict(zip("xyz", p, strict=True)),
            "orientation": dict(zip("xyzw", q, strict=True)),
        },
    }


@pytest.mark.parametrize("count", [0, 1, 6])
def test_joint_state_bytes_are_mcap_ros2s(count):
    names = [f"joint_{i}" * (i + 1) for i in range(count)]  # lengths that need padding
    p, v, e = (RNG.normal(size=count).tolist() for _ in range(3))
    message = {
        "header": {"stamp": _time(12.345678901), "frame_id": "x" * (count % 3)},
        "name": names,
        "position": p,
        "velocity": v,
        "effort": e,
    }
    ours = cdr.joint_state(12.345678901, "x" * (count % 3), names, p, v, e)
    assert ours == _mcap_ros2_bytes("sensor_msgs/msg/JointState", JOINT_STATE, message)


def test_pose_stamped_and_path_bytes_are_mcap_ros2s():
    p, q = RNG.normal(size=3).tolist(), RNG.normal(size=4).tolist()
    ours = cdr.pose_stamped(3.0e-3, "world", p, q)
    assert ours == _mcap_ros2_bytes(
        "geometry_msgs/msg/PoseStamped", POSE_STAMPED, _pose(3.0e-3, "world", p, q)
    )
    times, points = [0.0, 0.01, 0.02], RNG.normal(size=(3, 3)).tolist()
    message = {
        "header": {"stamp": _time(0.0), "frame_id": "world"},
        "poses": [_pose(t, "world", x, (0.0, 0.0, 0.0, 1.0)) for t, x in zip(times, points, strict=True)],
    }
    ours = cdr.path(0.0, "world", times, points)
    assert ours == _mcap_ros2_bytes("nav_msgs/msg/Path", PATH, message)


def test_joint_trajectory_bytes_are_mcap_ros2s():
    names = ["a", "bb", "ccc"]
    times = [0.0, 0.5, 1.25]
    p, v, a = (RNG.normal(size=(3, 3)).tolist() for _ in range(3))
    message = {
        "header": {"stamp": _time(0.0), "frame_id": "world"},
        "joint_names": names,
        "points": [
            {
                "positions": p[i],
                "velocities": v[i],
                "accelerations": a[i],
                "effort": [],
                "time_from_start": _time(times[i]),
            }
            for i in range(3)
        ],
    }
    ours = cdr.joint_trajectory(0.0, "world", names, times, p, v, a)
    assert ours == _mcap_ros2_bytes("trajectory_msgs/msg/JointTrajectory", JOINT_TRAJECTORY, message)


def test_a_written_log_reads_back_through_mcap_ros2(tmp_path):
    count, names = 25, ("j1", "j2")
    time = np.arange(count) * 1e-3
    arrays = {key: RNG.normal(size=(count, 2)) for key in ("measured", "measured_velocity", "effort")}
    tip, quaternion = RNG.normal(size=(count, 3)), RNG.normal(size=(count, 4))
    log = SimulationLog(
        names=names,
        time=time,
        position=arrays["measured"],
        velocity=arrays["measured_velocity"],
        reference=arrays["measured"],
        current=arrays["effort"],
        tip=tip,
        planned_tip=tip,
        tool0=tip,
        planned_tool0=tip,
        thrust=np.zeros(count),
        controller_time=np.zeros(count),
        tip_orientation=quaternion,
        **arrays,
    )
    trajectory = JointTrajectory(1e-3, arrays["measured"], arrays["measured"], arrays["effort"], names=names)
    path = write_mcap(tmp_path / "log.mcap", log, trajectory)
    with path.open("rb") as stream:
        messages = list(make_reader(stream, decoder_factories=[DecoderFactory()]).iter_decoded_messages())
    states = [m for _, channel, _, m in messages if channel.topic == "/joint_states"]
    poses = [m for _, channel, _, m in messages if channel.topic == "/quirobot/tip_pose_true"]
    assert len(states) == len(poses) == count
    assert np.array_equal([s.position for s in states], arrays["measured"])
    assert np.array_equal([s.velocity for s in states], arrays["measured_velocity"])
    assert np.array_equal([s.effort for s in states], arrays["effort"])
    assert [s.header.stamp.nanosec for s in states] == [k * 1_000_000 for k in range(count)]
    assert np.array_equal([[p.pose.position.x, p.pose.position.y, p.pose.position.z] for p in poses], tip)
    w_first = [
        [p.pose.orientation.w, p.pose.orientation.x, p.pose.orientation.y, p.pose.orientation.z]
        for p in poses
    ]
    assert np.array_equal(w_first, quaternion)


@pytest.mark.parametrize("count", [0, 1, 6])
@pytest.mark.parametrize("frame", ["", "x", "world"])
def test_joint_state_rows_are_the_one_message_encoders_bytes(count, frame):
    names = [f"joint_{i}" * (i + 1) for i in range(count)]
    rows = 40
    times = np.concatenate([[0.0, 2.5e-10, 1.5e-9, -1.0e-3, 1e6 + 0.5e-9], RNG.uniform(0.0, 100.0, rows - 5)])
    p, v, e = (RNG.normal(size=(rows, count)) for _ in range(3))
    if count:  # the values CDR must carry as they are
        p[0, 0], v[1, 0], e[2, 0], p[3, -1] = np.nan, np.inf, -0.0, -np.inf
    ours = cdr.joint_state_layout(frame, names).rows(cdr.stamps_ns(times), p, v, e)
    expected = [
        cdr.joint_state(t, frame, names, p[k].tolist(), v[k].tolist(), e[k].tolist())
        for k, t in enumerate(times.tolist())
    ]
    assert ours == expected


@pytest.mark.parametrize("frame", ["", "world", "patient"])
def test_pose_stamped_rows_are_the_one_message_encoders_bytes(frame):
    times = np.concatenate([[0.0, 0.5e-9, 3.0e-3], RNG.uniform(0.0, 50.0, 20)])
    position, orientation = RNG.normal(size=(len(times), 3)), RNG.normal(size=(len(times), 4))
    ours = cdr.pose_stamped_layout(frame).rows(cdr.stamps_ns(times), position, orientation)
    expected = [
        cdr.pose_stamped(t, frame, position[k].tolist(), orientation[k].tolist())
        for k, t in enumerate(times.tolist())
    ]
    assert ours == expected
    assert cdr.stamps_ns(times).tolist() == [int(round(t * 1e9)) for t in times.tolist()]


def test_rows_refuse_a_stamp_beyond_int32_seconds():
    with pytest.raises(ValueError, match="int32 sec"):
        cdr.pose_stamped_layout("world").rows(
            cdr.stamps_ns(np.array([2.0**31])), np.zeros((1, 3)), np.zeros((1, 4))
        )
