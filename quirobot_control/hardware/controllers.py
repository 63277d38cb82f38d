"""The ros2_control controllers of the stack, named once: config/controllers.yaml and
config/controllers_gazebo.yaml declare them, the launch files spawn them in this order, task_node
sends its trajectories to the two trajectory controllers, drive_node's stopper deactivates them.
"""

from __future__ import annotations

#: Publishes /joint_states from the hardware's state interfaces (the first to start).
BROADCASTER = "joint_state_broadcaster"
#: The arm's joint_trajectory_controller: the gantry and wrist joints.
ARM_CONTROLLER = "joint_trajectory_controller"
#: The drill feed's joint_trajectory_controller (tool drill only).
FEED_CONTROLLER = "drill_feed_controller"
#: Every controller, in start order.
CONTROLLERS = (BROADCASTER, ARM_CONTROLLER, FEED_CONTROLLER)


def spawned_controllers(tool: str) -> list[str]:
    """The controllers a launch starts for `tool` (drill, arthroscope, none), in start order: the
    broadcaster, the arm's trajectory controller, and the feed's with the drill."""
    return [name for name in CONTROLLERS if name != FEED_CONTROLLER or tool == "drill"]
