"""ROS 2 node `drive_node`: the drive side of joint_state_topic_hardware_interface (thin adapter).

Subscribes to the controllers' commands (sensor_msgs/msg/JointState on /quirobot/joint_commands:
name, position, velocity) and publishes the joint states (/quirobot/joint_states) at the
control rate, both with sensor-data QoS, as
joint_state_topic_hardware_interface/JointStateTopicSystem expects (hardware:=real in the
URDF; it subscribes to the states with sensor-data QoS and publishes the commands reliable,
depth 1). The joints and so the drives are those of the robot description's <ros2_control>
block. Every behaviour (start-up handshake, watchdog, safety layer) is in
`quirobot_control.bridge.drive_bridge.DriveBridge`; this node passes it the messages and a monotonic
clock (time.monotonic(), s). rclpy is imported only inside `main`.

Parameters:
- robot_description: the URDF XML (as the launch file gives robot_state_publisher). Empty
  (default): the node waits for the latched /robot_description topic (transient local).
- commands_topic, states_topic: defaults as in the URDF's <ros2_control> block.
- drive_backend: "simulated" (SimulatedDrives on the MuJoCo plant, default) or "canopen" (the
  CiA 402 servo drives on the CAN buses of the parameter file, canopen.channels).
- can_interface: python-can interface of the buses (default socketcan).
- can_channels: "bus=channel" pairs (e.g. "can0=vcan0,can1=vcan1,can2=vcan2") for buses whose
  channel is not their own name (default: none).

Simulated backend only: `simulated_bone` (a task name, e.g. incision; default "none") puts that
task's bone in the plant (its thrust on the drill tip); `test_fault_injection` (default false,
tests only) adds the service ~/inject_fault (std_srvs/Trigger) that faults the drill feed's drive.
The simulated plant is stepped with the wall clock (up to 10 periods per timer tick): a timer
that fires late under load must not slow the simulated robot down against the controllers.

A stop (a safety stop, the command watchdog, a drive fault) is logged once as an error line
"drives stopped: <reason>" and published on /quirobot/drive_stop (std_msgs/String, latched).
A start-up failure (no such CAN interface, a node that does not
answer, a malformed description, ...) is logged in one line and the node exits with status 1
without enabling anything. On shutdown (SIGINT or SIGTERM) every drive is stopped and the buses
are released; the node exits with status 0.
"""

from __future__ import annotations

import signal
import sys
import time


def main(args: list[str] | None = None) -> int:
    import rclpy
    from rclpy.node import Node
    from rclpy.qos import DurabilityPolicy, QoSProfile, qos_profile_sensor_data
    from rclpy.signals import SignalHandlerOptions
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String

    from quirobot_control.bridge.canopen_backend import CanBusConfig, parse_channel_map
    from quirobot_control.bridge.drive_bridge import BridgeError, open_bridge
    from quirobot_control.loop.control_config import control_configuration
    from quirobot_description.parameters import FEED_JOINT, load_parameters

    # SIGINT and SIGTERM (launch's escalation) as KeyboardInterrupt in spin, so that the drives are
    # stopped and the buses released on the way out. Not rclpy's handler: it shuts the context
    # down under a spinning executor (a take_message RuntimeError, exit 1). Installed explicitly:
    # a SIGINT ignored by the parent (a launch in a non-interactive shell) is inherited as ignored.
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    for stop_signal in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop_signal, _interrupt)
    node = Node("drive_node")
    description = node.declare_parameter("robot_description", "").value
    commands_topic = node.declare_parameter("commands_topic", "/quirobot/joint_commands").value
    states_topic = node.declare_parameter("states_topic", "/quirobot/joint_states").value
    backend_name = node.declare_parameter("drive_backend", "simulated").value
    can_interface = node.declare_parameter("can_interface", "socketcan").value
    can_channels = node.declare_parameter("can_channels", "").value
    simulated_bone = node.declare_parameter("simulated_bone", "").value
    fault_injection = bool(node.declare_parameter("test_fault_injection", False).value)

    def shut_down() -> None:
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()

    if not description:
        received: list[str] = []
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        node.create_subscription(String, "/robot_description", lambda m: received.append(m.data), latched)
        node.get_logger().info("waiting for /robot_description")
        try:
            while rclpy.ok() and not received:
                rclpy.spin_once(node, timeout_sec=0.5)
        except KeyboardInterrupt:
            shut_down()
            return 0
        if not received:
            shut_down()
            return 0
        description = received[0]
    try:
        params = load_parameters()
        control = control_configuration(params)
        can = CanBusConfig(can_interface, parse_channel_map(can_channels))
        bridge = open_bridge(backend_name, params, control, description, now=time.monotonic(), can=can)
        simulated = backend_name == "simulated"
        if (simulated_bone not in ("", "none") or fault_injection) and not simulated:
            raise ValueError("simulated_bone and test_fault_injection are for the simulated backend")
        if simulated_bone not in ("", "none"):
            bridge.backend.place_bone(simulated_bone)
    except (ValueError, OSError) as error:
        node.get_logger().fatal(f"drive start-up failed: {' '.join(str(error).split())}")
        shut_down()
        return 1
    node.get_logger().info(f"drives up ({backend_name} backend): {', '.join(bridge.names)}")
    publisher = node.create_publisher(JointState, states_topic, qos_profile_sensor_data)
    reported = {"stop": None, "events": 0}
    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    stop_publisher = node.create_publisher(String, "/quirobot/drive_stop", latched)
    clock = {"start": time.monotonic(), "periods": 0}

    def on_command(message: JointState) -> None:
        try:
            bridge.command(
                list(message.name), list(message.position), list(message.velocity), now=time.monotonic()
            )
        except BridgeError as error:
            node.get_logger().error(f"command refused: {error}")

    def on_timer() -> None:
        now = time.monotonic()
        due = 1
        if simulated:  # the plant's time follows the wall clock (the controllers' time)
            due = min(max(int((now - clock["start"]) / control.dt) - clock["periods"], 1), 10)
        for _ in range(due):
            sample = bridge.step(now)
        clock["periods"] += due
        message = JointState()
        message.header.stamp = node.get_clock().now().to_msg()
        message.name = list(sample.names)
        message.position = sample.position
        message.velocity = sample.velocity
        message.effort = sample.effort
        publisher.publish(message)
        for event in bridge.events[reported["events"] :]:
            node.get_logger().info(event)
        reported["events"] = len(bridge.events)
        if sample.stop_reason and reported["stop"] != sample.stop_reason:
            reported["stop"] = sample.stop_reason
            node.get_logger().error(f"drives stopped: {sample.stop_reason}")
            stop_publisher.publish(String(data=sample.stop_reason))

    node.create_subscription(JointState, commands_topic, on_command, qos_profile_sensor_data)
    if fault_injection:
        from std_srvs.srv import Trigger

        def inject_fault(request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
            bridge.drives[FEED_JOINT].inject_fault("injected by ~/inject_fault (test)")
            response.success, response.message = True, f"{FEED_JOINT} drive faulted"
            return response

        node.create_service(Trigger, "~/inject_fault", inject_fault)
    node.create_timer(control.dt, on_timer)
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    except RuntimeError:
        # The signal's KeyboardInterrupt raised inside rclpy's C++ take_message comes out as a
        # pybind11 RuntimeError; a RuntimeError without a signal is a real error.
        if not _INTERRUPTED:
            raise
    finally:
        for problem in bridge.close():
            node.get_logger().warning(f"shutdown: {problem}")
        shut_down()
    return 0


_INTERRUPTED: list[int] = []


def _interrupt(signum: int, frame: object) -> None:
    _INTERRUPTED.append(signum)
    raise KeyboardInterrupt(signal.Signals(signum).name)


if __name__ == "__main__":
    sys.exit(main())
