"""Forward and inverse kinematics of QUIROBOT, closed form (no ROS).

Shows: the pose of tool0 and of the drill tip for a joint vector (`fk`), the joints for a
position and an approach direction (`ik` with an `ApproachTarget`), a full pose round trip, and
the one-line refusal of a target the joints cannot reach (`IKError`).

    python examples/01_forward_inverse_kinematics.py
"""

import numpy as np

from quirobot_kinematics import ApproachTarget, IKError, fk, ik

# Joints in the design report's order: d1, d2, d3 in m (gantry x, y, down), theta4, theta5 in rad.
q = np.array([1.0, 1.0, 0.5, 0.0, np.pi / 2])
T = fk(q)  # (4, 4): columns n, o, a (the drilling direction), p, in the world frame
print(f"tool0 at {T[:3, 3].round(4)} m, approach a = {T[:3, 2].round(4)}")
tip = fk(q, feed=0.05)[:3, 3]  # the drill tip 50 mm along a (the feed axis)
print(f"drill tip with 50 mm feed at {tip.round(4)} m")

# Inverse: a point and the direction to drill along (roll about the tool axis left free).
target = ApproachTarget(position=[1.2, 0.8, -1.0], approach=[0.0, 0.5, -np.sqrt(3) / 2])
solution = ik(target)
reached = fk(solution)
print(f"ik -> q = {solution.round(6)} (m, m, m, rad, rad)")
print(f"  position error {np.linalg.norm(reached[:3, 3] - target.position) * 1e9:.3f} nm")

# A full pose round-trips to the joints it came from.
pose = fk([0.5, 0.7, 0.3, 0.2, 0.4])
print(f"full pose round trip: {np.allclose(ik(pose), [0.5, 0.7, 0.3, 0.2, 0.4])}")

# Pointing the tool up is outside wrist_pitch's range: one line naming the joint and the amount.
try:
    ik(ApproachTarget(position=[1.0, 1.0, -1.0], approach=[0.0, 0.0, 1.0]))
except IKError as error:
    print(f"refused: {error}")
