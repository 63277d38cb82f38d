"""A quirobot/action/DrillHole goal message from its values, for a Python client of the stack (the
example client, bench/sim_goal.py, the ROS tier's tests): each states only what differs (the
task, the depth, the frame). The message package is imported inside the function."""

from __future__ import annotations

from collections.abc import Sequence


def drill_hole_goal(
    entry: Sequence[float],
    direction: Sequence[float],
    depth: float,
    feed_rate: float,
    max_thrust: float,
    frame: str = "world",
    task: str = "",
):
    """The DrillHole goal: `entry` (3,) m and `direction` (3,) in `frame`, `depth` m, `feed_rate`
    m/s, `max_thrust` N, `task` the goal's task file ("": task_node's `task` parameter)."""
    from quirobot.action import DrillHole

    goal = DrillHole.Goal()
    goal.entry.header.frame_id = goal.direction.header.frame_id = frame
    goal.entry.point.x, goal.entry.point.y, goal.entry.point.z = (float(v) for v in entry)
    goal.direction.vector.x, goal.direction.vector.y, goal.direction.vector.z = (float(v) for v in direction)
    goal.depth, goal.feed_rate, goal.max_thrust, goal.task = depth, feed_rate, max_thrust, task
    return goal
