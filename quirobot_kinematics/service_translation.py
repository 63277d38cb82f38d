"""ROS-free logic of the kinematics services: moveit_msgs GetPositionFK / GetPositionIK.

The dataclasses mirror the message fields one for one (same names), so the ROS node only copies
fields in and out; every decision (frames, link names, robot state checks, IK mode, error codes
and their messages) is made and tested here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from quirobot_description.parameters import JOINT_NAMES, DrillParameters
from quirobot_kinematics.forward import FRAME_NAMES, link_frames
from quirobot_kinematics.inverse import (
    DEFAULT_ORIENTATION_TOLERANCE,
    ApproachTarget,
    IKError,
    inverse_kinematics,
)
from quirobot_kinematics.model import KinematicModel, KinematicsError
from quirobot_kinematics.rotations import matrix_from_quaternion, quaternion_from_matrix

#: Frames a request may be expressed in (base_link coincides with world); "" means world.
REFERENCE_FRAMES = ("world", "base_link")
#: Links whose pose IK can be asked for; "" means tool0.
IK_LINKS = ("tool0", "drill_tip")
ORIENTATION_MODES = ("full", "approach")


class MoveItErrorCodes:
    """moveit_msgs/msg/MoveItErrorCodes values used here."""

    SUCCESS = 1
    INVALID_ROBOT_STATE = -17
    INVALID_LINK_NAME = -18
    FRAME_TRANSFORM_FAILURE = -21
    NO_IK_SOLUTION = -31


@dataclass
class ErrorCode:
    val: int = MoveItErrorCodes.SUCCESS
    message: str = ""


@dataclass
class Header:
    frame_id: str = ""


@dataclass
class Point:
    x: float = 0.0
    y: float = 0.0
    z: float = 0.0


@dataclass
class Quaternion:
    x: float = 0.0
    y: float = 0.0
    z: float = 0.0
    w: float = 1.0


@dataclass
class Pose:
    position: Point = field(default_factory=Point)
    orientation: Quaternion = field(default_factory=Quaternion)


@dataclass
class PoseStamped:
    header: Header = field(default_factory=Header)
    pose: Pose = field(default_factory=Pose)


@dataclass
class JointState:
    name: list[str] = field(default_factory=list)
    position: list[float] = field(default_factory=list)


@dataclass
class RobotState:
    joint_state: JointState = field(default_factory=JointState)


@dataclass
class GetPositionFKRequest:
    header: Header = field(default_factory=Header)
    fk_link_names: list[str] = field(default_factory=list)
    robot_state: RobotState = field(default_factory=RobotState)


@dataclass
class GetPositionFKResponse:
    pose_stamped: list[PoseStamped] = field(default_factory=list)
    fk_link_names: list[str] = field(default_factory=list)
    error_code: ErrorCode = field(default_factory=ErrorCode)


@dataclass
class PositionIKRequest:
    group_name: str = ""
    robot_state: RobotState = field(default_factory=RobotState)
    ik_link_name: str = ""
    pose_stamped: PoseStamped = field(default_factory=PoseStamped)


@dataclass
class GetPositionIKRequest:
    ik_request: PositionIKRequest = field(default_factory=PositionIKRequest)


@dataclass
class GetPositionIKResponse:
    solution: RobotState = field(default_factory=RobotState)
    error_code: ErrorCode = field(default_factory=ErrorCode)


class _RefusalError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def pose_from_matrix(T: np.ndarray) -> Pose:
    x, y, z, w = quaternion_from_matrix(T[:3, :3])
    return Pose(Point(*(float(v) for v in T[:3, 3])), Quaternion(x, y, z, w))


def matrix_from_pose(pose: Pose) -> np.ndarray:
    """(4, 4) of a Pose; KinematicsError for NaN/inf or a zero quaternion."""
    position = (pose.position.x, pose.position.y, pose.position.z)
    if not all(math.isfinite(v) for v in position):
        raise KinematicsError(f"pose position must be finite, got {list(position)}")
    o = pose.orientation
    T = np.eye(4)
    T[:3, :3] = matrix_from_quaternion(o.x, o.y, o.z, o.w)
    T[:3, 3] = position
    return T


def _frame(frame_id: str) -> str:
    if frame_id == "":
        return "world"
    if frame_id.lstrip("/") in REFERENCE_FRAMES:
        return frame_id.lstrip("/")
    raise _RefusalError(
        MoveItErrorCodes.FRAME_TRANSFORM_FAILURE,
        f"frame_id {frame_id!r} is not supported: give poses in {' or '.join(REFERENCE_FRAMES)}",
    )


def _joint_values(state: RobotState, required: bool) -> tuple[np.ndarray | None, float]:
    """(q (5,) or None if absent and not required, drill feed in m) from a RobotState."""
    names = list(state.joint_state.name)
    positions = list(state.joint_state.position)
    if len(names) != len(positions):
        raise _RefusalError(
            MoveItErrorCodes.INVALID_ROBOT_STATE,
            f"robot_state has {len(names)} joint names but {len(positions)} positions",
        )
    values = dict(zip(names, positions, strict=True))
    for name, value in values.items():
        if not math.isfinite(value):
            raise _RefusalError(MoveItErrorCodes.INVALID_ROBOT_STATE, f"robot_state joint {name} is {value}")
    feed = float(values.get(DrillParameters.feed_joint, 0.0))
    missing = [name for name in JOINT_NAMES if name not in values]
    if missing and (required or len(missing) < len(JOINT_NAMES)):
        raise _RefusalError(
            MoveItErrorCodes.INVALID_ROBOT_STATE,
            f"robot_state lacks joint(s) {', '.join(missing)}; it needs {', '.join(JOINT_NAMES)}",
        )
    if missing:
        return None, feed
    return np.array([values[name] for name in JOINT_NAMES], dtype=float), feed


class KinematicsService:
    """Answers GetPositionFK and GetPositionIK requests (the dataclasses above) from the core.

    orientation_mode "full": an IK pose must be reachable as given (tool x horizontal within
    `orientation_tolerance` rad); "approach": only the pose's z axis (the approach) counts, the
    roll about it is free.
    """

    def __init__(
        self,
        model: KinematicModel,
        orientation_mode: str = "full",
        orientation_tolerance: float = DEFAULT_ORIENTATION_TOLERANCE,
    ) -> None:
        check_orientation_mode(orientation_mode)
        if not 0.0 <= orientation_tolerance < math.pi / 2:
            raise ValueError(
                f"orientation_tolerance must be an angle in [0, pi/2) rad, got {orientation_tolerance}"
            )
        self.model = model
        self.orientation_mode = orientation_mode
        self.orientation_tolerance = orientation_tolerance

    def compute_fk(self, request: GetPositionFKRequest) -> GetPositionFKResponse:
        response = GetPositionFKResponse()
        try:
            frame = _frame(request.header.frame_id)
            unknown = [name for name in request.fk_link_names if name not in FRAME_NAMES]
            if unknown:
                raise _RefusalError(
                    MoveItErrorCodes.INVALID_LINK_NAME,
                    f"unknown link(s) {', '.join(map(repr, unknown))}; links are {', '.join(FRAME_NAMES)}",
                )
            q, feed = _joint_values(request.robot_state, required=True)
            frames = link_frames(q, self.model, feed=feed)
        except _RefusalError as refusal:
            response.error_code = ErrorCode(refusal.code, refusal.message)
            return response
        for name in request.fk_link_names:
            response.pose_stamped.append(PoseStamped(Header(frame), pose_from_matrix(frames[name])))
            response.fk_link_names.append(name)
        response.error_code = ErrorCode(MoveItErrorCodes.SUCCESS, "")
        return response

    def compute_ik(self, request: GetPositionIKRequest) -> GetPositionIKResponse:
        response = GetPositionIKResponse()
        ik = request.ik_request
        try:
            link = ik.ik_link_name or "tool0"
            if link not in IK_LINKS:
                raise _RefusalError(
                    MoveItErrorCodes.INVALID_LINK_NAME,
                    f"ik_link_name {ik.ik_link_name!r} is not supported: use {' or '.join(IK_LINKS)}",
                )
            _frame(ik.pose_stamped.header.frame_id)
            seed, feed = _joint_values(ik.robot_state, required=False)
            if link == "tool0":
                feed = 0.0
            elif not self.model.feed_lower <= feed <= self.model.feed_upper:
                raise _RefusalError(
                    MoveItErrorCodes.INVALID_ROBOT_STATE,
                    f"{DrillParameters.feed_joint} {feed} m is outside its travel "
                    f"[{self.model.feed_lower}, {self.model.feed_upper}] m",
                )
            try:
                T = matrix_from_pose(ik.pose_stamped.pose)
            except KinematicsError as error:
                raise _RefusalError(
                    MoveItErrorCodes.NO_IK_SOLUTION, f"invalid target pose: {error}"
                ) from error
            target: object = ApproachTarget(T[:3, 3], T[:3, 2]) if self.orientation_mode == "approach" else T
            try:
                q = inverse_kinematics(
                    target, self.model, seed=seed, feed=feed, orientation_tolerance=self.orientation_tolerance
                )
            except IKError as error:
                raise _RefusalError(MoveItErrorCodes.NO_IK_SOLUTION, str(error)) from error
        except _RefusalError as refusal:
            response.error_code = ErrorCode(refusal.code, refusal.message)
            return response
        names = list(JOINT_NAMES)
        positions = q.tolist()
        if link == "drill_tip":
            names.append(DrillParameters.feed_joint)
            positions.append(feed)
        response.solution = RobotState(JointState(names, positions))
        response.error_code = ErrorCode(MoveItErrorCodes.SUCCESS, "")
        return response


def check_orientation_mode(mode: str) -> str:
    if mode not in ORIENTATION_MODES:
        raise ValueError(f"orientation_mode must be one of {', '.join(ORIENTATION_MODES)}, got {mode!r}")
    return mode
