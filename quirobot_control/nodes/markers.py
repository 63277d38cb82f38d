"""planning.scene's marker data as a visualization_msgs/MarkerArray (the nodes' one converter).

rclpy and the message packages are imported inside the function only.
"""

from __future__ import annotations

from collections.abc import Sequence

from quirobot_control.planning.scene import SceneMarker


def marker_array(markers: Sequence[SceneMarker], stamp, frame: str = "world", clear: bool = True):
    """The MarkerArray of `markers` at `stamp` (builtin_interfaces/Time) in `frame`; `clear`:
    first a DELETEALL, so that a marker no longer drawn vanishes (each topic has its own display)."""
    from geometry_msgs.msg import Point
    from std_msgs.msg import ColorRGBA
    from visualization_msgs.msg import Marker, MarkerArray

    array = MarkerArray()
    if clear:
        deleteall = Marker(action=Marker.DELETEALL)
        deleteall.header.frame_id, deleteall.header.stamp = frame, stamp
        array.markers.append(deleteall)
    for item in markers:
        marker = Marker(ns=item.namespace, id=item.id, type=item.type_number, action=Marker.ADD)
        marker.header.frame_id, marker.header.stamp = frame, stamp
        p, o = marker.pose.position, marker.pose.orientation
        p.x, p.y, p.z = item.position
        o.x, o.y, o.z, o.w = item.orientation
        marker.scale.x, marker.scale.y, marker.scale.z = item.scale
        r, g, b, a = item.colour
        marker.color = ColorRGBA(r=r, g=g, b=b, a=a)
        marker.points = [Point(x=x, y=y, z=z) for x, y, z in item.points]
        marker.frame_locked = False
        array.markers.append(marker)
    return array
