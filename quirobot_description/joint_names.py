"""The robot's joint, link and tool-axis names: declared here once, imported everywhere else.

The arm's five joints in the report's order (d1, d2, d3, theta4, theta5), their kinds, the moving
links they carry and the drill's own feed axis. The URDF (urdf/*.xacro) spells the same names;
test/description/test_description_links.py checks it against these.
"""

from __future__ import annotations

#: Joint names in the report's order: d1, d2, d3, theta4, theta5.
JOINT_NAMES = ("gantry_x", "gantry_y", "gantry_z", "wrist_yaw", "wrist_pitch")
#: Each joint's kind (the report's DH table), in JOINT_NAMES order.
JOINT_TYPES = ("prismatic", "prismatic", "prismatic", "revolute", "revolute")
#: The gantry's linear joints and the wrist's rotary ones, in JOINT_NAMES order.
PRISMATIC_JOINTS = tuple(n for n, t in zip(JOINT_NAMES, JOINT_TYPES, strict=True) if t == "prismatic")
REVOLUTE_JOINTS = tuple(n for n, t in zip(JOINT_NAMES, JOINT_TYPES, strict=True) if t == "revolute")
#: Moving links, each the child of the joint at the same index of JOINT_NAMES.
LINK_NAMES = ("x_carriage", "y_carriage", "z_ram", "wrist_yaw_link", "wrist_pitch_link")
#: The drill's own axis: its feed, a prismatic joint along tool z, servo-driven like the joints.
FEED_JOINT = "drill_feed"
