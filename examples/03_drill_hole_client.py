"""A DrillHole action client: ask the running stack for a hole, print its feedback and result.

Needs ROS 2 Jazzy and the built package (colcon build; source install/setup.bash), and the
stack running in another terminal:

    ros2 launch quirobot sim.launch.py          # simulated drives, controllers, task_node
    python examples/03_drill_hole_client.py     # the shipped incision (25.2 mm, ~30 s of plant time)
    python examples/03_drill_hole_client.py --depth 0.005   # a shallower hole (m)

The goal is the shipped incision's (config/tasks/incision.yaml: entry, direction, depth, feed
rate) in the world frame; task_node plans it, checks it (a goal it refuses ends at once with
REJECTED_* and the reason), drills it through both trajectory controllers and ends at the park
pose. Ctrl-C cancels the goal: in bone the bit retracts along its axis first. A result lost in
transport is asked for again (nodes.action_result).
docs/drive_from_another_node.md describes every phase and error code.
"""

import argparse

from quirobot_control.nodes.action_result import goal_result_request
from quirobot_control.nodes.drill_hole_goal import drill_hole_goal
from quirobot_control.planning.tasks import load_task


def goal_values(depth: float | None = None, max_thrust: float = 60.0) -> dict:
    """The shipped incision as DrillHole goal fields (m, m/s, N; drill_hole_goal's arguments, the
    world frame); `depth` overrides its depth."""
    task = load_task("incision")
    return {
        "entry": task.entry,  # (3,) m, world
        "direction": task.direction,  # (3,) unit, into the bone
        "depth": task.depth if depth is None else depth,
        "feed_rate": task.feed_rate,
        "max_thrust": max_thrust,  # N: the goal's bound, below the robot's own 80 N limit
        "task": "incision",  # the bone model task_node's monitors use
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--depth", type=float, help="m past the entry (default: the task's 25.2 mm)")
    args = parser.parse_args()

    import rclpy
    from quirobot.action import DrillHole
    from rclpy.action import ActionClient
    from rclpy.signals import SignalHandlerOptions

    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)  # Ctrl-C: the context stays up to cancel
    node = rclpy.create_node("drill_hole_example")
    client = ActionClient(node, DrillHole, "/quirobot/drill_hole")
    if not client.wait_for_server(timeout_sec=30.0):
        print("no /quirobot/drill_hole server: is `ros2 launch quirobot sim.launch.py` running?")
        return 1

    def show(message) -> None:  # one line per feedback message
        f = message.feedback
        print(
            f"{f.phase:14s} depth {f.depth * 1e3:7.3f} mm  lateral {f.lateral_error * 1e6:6.1f} um  "
            f"thrust {f.thrust:5.1f} N  {f.progress:4.0%}"
        )

    sent = client.send_goal_async(drill_hole_goal(**goal_values(args.depth)), feedback_callback=show)
    rclpy.spin_until_future_complete(node, sent)
    handle = sent.result()
    if not handle.accepted:
        print("goal not accepted (task_node inactive or busy)")
        return 1
    answers: list = []
    request = goal_result_request(
        handle, answers.append, on_again=lambda n: print("the goal ended, no result came: asking again")
    )

    def wait_for_result() -> None:
        while not request.poll():
            rclpy.spin_once(node, timeout_sec=0.5)

    try:
        wait_for_result()
    except KeyboardInterrupt:  # cancel: the bit leaves the bone before the goal ends
        print("Ctrl-C: canceling the goal and waiting for its end (Ctrl-C again: leave now)")
        try:
            rclpy.spin_until_future_complete(node, handle.cancel_goal_async())
            wait_for_result()
        except KeyboardInterrupt:
            print("left before the goal's end: `ros2 action info /quirobot/drill_hole` shows it")
            return 130
    result = answers[0].result
    print(f"success {result.success}, error code {result.error_code}: {result.message or 'ok'}")
    print(
        f"achieved depth {result.achieved_depth * 1e3:.3f} mm, "
        f"largest lateral deviation {result.max_lateral_deviation * 1e6:.1f} um"
    )
    node.destroy_node()
    rclpy.shutdown()
    return 0 if result.success else 1


if __name__ == "__main__":
    raise SystemExit(main())
