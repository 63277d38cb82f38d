"""ROS 2 node `kinematics_node`: serves moveit_msgs/srv/GetPositionFK and GetPositionIK.

    ros2 run quirobot kinematics_node [--ros-args -p orientation_mode:=approach]

Services `compute_fk` and `compute_ik` in the node's namespace (default /quirobot, as
launch/kinematics.launch.py sets it). Parameters (orientation_mode, orientation_tolerance, which
may change at run time, and parameter_file): each declared once, with its type, default, unit and
range, in `quirobot_kinematics.kinematics_node_parameters` (the table: docs/node_parameters.md).

A thin adapter: messages are copied into the dataclasses of
`quirobot_kinematics.service_translation` and back; every decision is made there. rclpy and
the message packages are imported only inside this module's functions.
"""

from __future__ import annotations

import sys

from quirobot_description.parameters import load_parameters
from quirobot_kinematics import service_translation as st
from quirobot_kinematics.kinematics_node_parameters import KINEMATICS_NODE
from quirobot_kinematics.model import KinematicModel

DEFAULT_NAMESPACE = "quirobot"
NODE_NAME = "kinematics_node"


def _robot_state_in(message) -> st.RobotState:
    joint_state = message.joint_state
    return st.RobotState(st.JointState(list(joint_state.name), [float(p) for p in joint_state.position]))


def _pose_in(message) -> st.PoseStamped:
    p, o = message.pose.position, message.pose.orientation
    return st.PoseStamped(
        st.Header(message.header.frame_id),
        st.Pose(st.Point(p.x, p.y, p.z), st.Quaternion(o.x, o.y, o.z, o.w)),
    )


def _error_code_out(error: st.ErrorCode, message) -> None:
    message.val = error.val
    if hasattr(message, "message"):  # MoveItErrorCodes has `message` from moveit_msgs 2.x (Jazzy) on
        message.message = error.message


def _pose_out(pose: st.PoseStamped, message, stamp) -> None:
    message.header.frame_id = pose.header.frame_id
    message.header.stamp = stamp
    message.pose.position.x, message.pose.position.y, message.pose.position.z = (
        pose.pose.position.x,
        pose.pose.position.y,
        pose.pose.position.z,
    )
    o = pose.pose.orientation
    message.pose.orientation.x, message.pose.orientation.y = o.x, o.y
    message.pose.orientation.z, message.pose.orientation.w = o.z, o.w


def build_node():
    """The rclpy node with both services (rclpy must be initialised)."""
    from geometry_msgs.msg import PoseStamped
    from moveit_msgs.srv import GetPositionFK, GetPositionIK
    from rcl_interfaces.msg import SetParametersResult
    from rclpy.node import Node

    from quirobot_description.ros_parameters import declare_parameters

    class KinematicsNode(Node):
        def __init__(self) -> None:
            super().__init__(NODE_NAME, namespace=DEFAULT_NAMESPACE)
            # Declared from their schema (quirobot_kinematics.kinematics_node_parameters), nowhere else.
            parameters = declare_parameters(self, KINEMATICS_NODE)
            mode = parameters["orientation_mode"]
            tolerance = parameters["orientation_tolerance"]
            parameter_file = parameters["parameter_file"]
            model = KinematicModel.from_parameters(load_parameters(parameter_file or None))
            self.service = st.KinematicsService(model, mode, tolerance)
            self.add_on_set_parameters_callback(self._on_parameters)
            self.create_service(GetPositionFK, "compute_fk", self._compute_fk)
            self.create_service(GetPositionIK, "compute_ik", self._compute_ik)
            self.get_logger().info(
                f"serving {self.resolve_service_name('compute_fk')} and "
                f"{self.resolve_service_name('compute_ik')} (orientation_mode {mode})"
            )

        def _on_parameters(self, parameters) -> SetParametersResult:
            mode = self.service.orientation_mode
            tolerance = self.service.orientation_tolerance
            for parameter in parameters:
                if parameter.name == "orientation_mode":
                    mode = parameter.value
                elif parameter.name == "orientation_tolerance":
                    tolerance = parameter.value
            try:
                self.service = st.KinematicsService(self.service.model, mode, tolerance)
            except ValueError as error:
                return SetParametersResult(successful=False, reason=str(error))
            return SetParametersResult(successful=True)

        def _compute_fk(self, request, response):
            answer = self.service.compute_fk(
                st.GetPositionFKRequest(
                    st.Header(request.header.frame_id),
                    list(request.fk_link_names),
                    _robot_state_in(request.robot_state),
                )
            )
            stamp = self.get_clock().now().to_msg()
            for pose in answer.pose_stamped:
                message = PoseStamped()
                _pose_out(pose, message, stamp)
                response.pose_stamped.append(message)
            response.fk_link_names = list(answer.fk_link_names)
            _error_code_out(answer.error_code, response.error_code)
            return response

        def _compute_ik(self, request, response):
            ik = request.ik_request
            answer = self.service.compute_ik(
                st.GetPositionIKRequest(
                    st.PositionIKRequest(
                        group_name=ik.group_name,
                        robot_state=_robot_state_in(ik.robot_state),
                        ik_link_name=ik.ik_link_name,
                        pose_stamped=_pose_in(ik.pose_stamped),
                    )
                )
            )
            response.solution.joint_state.header.stamp = self.get_clock().now().to_msg()
            response.solution.joint_state.name = list(answer.solution.joint_state.name)
            response.solution.joint_state.position = list(answer.solution.joint_state.position)
            _error_code_out(answer.error_code, response.error_code)
            return response

    return KinematicsNode()


def main(args: list[str] | None = None) -> int:
    try:
        import rclpy
        from rclpy.executors import ExternalShutdownException
    except ImportError as error:
        print(f"{NODE_NAME}: error: needs ROS 2 (source its setup script first): {error}", file=sys.stderr)
        return 2

    rclpy.init(args=args)
    node = None
    try:
        node = build_node()
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except ValueError as error:  # bad parameter file or parameter value: one line, exit 2
        print(f"{NODE_NAME}: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
