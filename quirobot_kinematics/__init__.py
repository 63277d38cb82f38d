"""Closed-form kinematics of QUIROBOT (ROS-free): FK, IK, Jacobians, resolved rate, workspace.

Model facts (report: Denavit-Hartenberg table and closed form), q = (d1, d2, d3, theta4, theta5):

    T(q) = [[s4,  c4*s5,  c4*c5,  d1 + l5*c4*c5],
            [c4, -s4*s5, -s4*c5,  d2 - l5*s4*c5],
            [0,   c5,    -s5,    -d3 - l4 - l5*s5],
            [0,   0,      0,      1]]

Tool z (the third column, a) is the approach / drilling direction; the drill tip is at
tool0 + feed * a.
"""

from quirobot_kinematics.forward import forward_kinematics, link_frames
from quirobot_kinematics.inverse import ApproachTarget, IKError, inverse_kinematics, inverse_kinematics_all
from quirobot_kinematics.model import KinematicModel, KinematicsError

__all__ = [
    "ApproachTarget",
    "IKError",
    "KinematicModel",
    "KinematicsError",
    "forward_kinematics",
    "inverse_kinematics",
    "inverse_kinematics_all",
    "link_frames",
]
