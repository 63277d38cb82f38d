"""task_node's /quirobot/scene (visualization_msgs/MarkerArray, transient local, 10 Hz on the
steady clock): the `task` parameter's bone and no-go zones, the planned axis of the running goal
(from /quirobot/drilling_context), the path the drill tip has drilled in bone and the live tip (FK
of the measured joints); built by planning.scene (`ScenePublisher` only converts). rclpy is
imported only inside functions.
"""

from __future__ import annotations

import numpy as np


class ScenePublisher:
    """/quirobot/scene (module docstring): planning.scene's markers of the task, the goal and the
    tip as a MarkerArray."""

    PERIOD = 0.1  # s (steady clock): RViz's view of the tip at 10 Hz

    def __init__(self, node) -> None:
        from quirobot.msg import DrillingContext as ContextMsg
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from visualization_msgs.msg import MarkerArray

        from quirobot_control.axes.virtual_fixtures import ToolGeometry
        from quirobot_control.planning.tasks import load_task
        from quirobot_description.parameters import load_parameters

        self.node = node
        self.tool = ToolGeometry.from_parameters(load_parameters())
        task = load_task(node.task) if node.task else None
        self.zones = task.no_go_zones if task is not None else ()
        bone = getattr(task, "bone", None)
        self.bone = (task.entry, task.direction, bone) if bone is not None else None
        self.axis = None  # (entry, direction, depth) of the running goal
        self.path = None  # planning.scene.DrilledPath of the running goal
        self._static = None  # (the axis they were built for, their Marker messages)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.publisher = node.create_publisher(MarkerArray, "/quirobot/scene", latched)
        node.create_subscription(
            ContextMsg, "/quirobot/drilling_context", self._on_context, latched, callback_group=node.group
        )
        node.create_timer(self.PERIOD, self.publish, callback_group=node.group, clock=node.port.steady)
        self.publish()

    def _on_context(self, message) -> None:
        from quirobot_control.planning.scene import DrilledPath

        if not message.active:
            return  # the last goal's axis and path stay drawn until the next goal
        entry = np.array([message.entry.x, message.entry.y, message.entry.z])
        direction = np.array([message.direction.x, message.direction.y, message.direction.z])
        axis = (entry, direction, float(message.depth))
        if self.axis is None or not all(np.array_equal(a, b) for a, b in zip(axis, self.axis, strict=True)):
            self.axis, self.path = axis, DrilledPath(entry, direction / np.linalg.norm(direction))

    def publish(self) -> None:
        from quirobot_control.axes.virtual_fixtures import tip_positions
        from quirobot_control.nodes.markers import marker_array
        from quirobot_control.planning.scene import scene_markers

        measured = self.node.port.measured()
        tip = None if measured is None else tip_positions(measured.position[None], self.tool)[0]
        path = self.path
        if path is not None and tip is not None:
            path.add(tip)
        stamp = self.node.get_clock().now().to_msg()
        # The task's bone and zones and the goal's axis change only with the goal: their markers
        # are built once per axis and restamped; the path and the tip every period.
        if self._static is None or self._static[0] is not self.axis:
            fixed = scene_markers(zones=self.zones, bone=self.bone, planned_axis=self.axis)
            self._static = (self.axis, marker_array(fixed, stamp).markers)
        moving = scene_markers(drilled_path=None if path is None else path.array(), tip=tip)
        array = marker_array(moving, stamp, clear=False)
        for marker in self._static[1]:
            marker.header.stamp = stamp
        array.markers[:0] = self._static[1]  # the DELETEALL first, then the scene
        self.publisher.publish(array)
