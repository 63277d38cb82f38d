"""How stale the joint states are that the arm's trajectory controller checks (sim.launch.py, lock-step).

Run beside a running `ros2 launch quirobot sim.launch.py` while a DrillHole goal moves the arm:

    python bench/sim_state_staleness.py [--seconds S] [--save [FILE]]    # default 40 s of wall time

For each /joint_trajectory_controller/controller_state sample while gantry_z moves (> 1 mm/s), it
finds the drive_node joint state (/quirobot/joint_states) whose gantry_z position the controller
used as feedback and prints how much older (ms of plant time) that state was than the
controller's cycle, and the largest gantry_z error seen. Lock-step makes the clock wait for the
controller manager, but its executor takes drive_node's states on its own threads: under load
the update loop can read a state several periods old, and the path-tolerance check sees
speed x that age as error.
"""

from __future__ import annotations

import argparse
import time

from bench_results import add_save_option, saved_output


def main(seconds: float = 40.0) -> None:
    import rclpy
    from control_msgs.msg import JointTrajectoryControllerState
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import JointState

    rclpy.init()
    node = rclpy.create_node("sim_state_staleness")
    first_stamp: dict[float, int] = {}  # gantry_z position (m, rounded) -> first stamp with it, ns
    samples: list[tuple[int, float, float]] = []  # controller stamp ns, feedback z m, error m

    def on_state(message: JointState) -> None:
        z = dict(zip(message.name, message.position, strict=True)).get("gantry_z")
        first_stamp.setdefault(round(z, 12), message.header.stamp.sec * 10**9 + message.header.stamp.nanosec)

    def on_controller(message: JointTrajectoryControllerState) -> None:
        i = list(message.joint_names).index("gantry_z")
        if abs(message.feedback.velocities[i]) > 1e-3:
            stamp = message.header.stamp.sec * 10**9 + message.header.stamp.nanosec
            samples.append((stamp, round(message.feedback.positions[i], 12), message.error.positions[i]))

    node.create_subscription(JointState, "/quirobot/joint_states", on_state, qos_profile_sensor_data)
    topic = "/joint_trajectory_controller/controller_state"
    node.create_subscription(JointTrajectoryControllerState, topic, on_controller, 10)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.1)
    ages = sorted((stamp - first_stamp[z]) / 1e6 for stamp, z, _ in samples if z in first_stamp)
    print(f"controller samples while gantry_z moved: {len(samples)}, matched to a joint state: {len(ages)}")
    if ages:
        print(
            f"state age at the controller (ms of plant time): median {ages[len(ages) // 2]:.0f}, "
            f"max {ages[-1]:.0f}"
        )
        print(
            f"largest gantry_z error: {max(abs(e) for _, _, e in samples) * 1e3:.3f} mm (path tolerance 1 mm)"
        )
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=40.0, help="wall time to listen (s)")
    add_save_option(parser, "sim_state_staleness.txt")
    args = parser.parse_args()
    with saved_output(args.save):
        main(args.seconds)
