"""simulation.bone_contact.BoneContact: the bone's thrust on the plant's drill tip, where the bone is.

The bone is the task's layers along the drilling axis from the entry point and, across the axis,
as wide as they are thick (a shaft): a tip moving along the axis into it is pushed back, the same
motion beside the bone is not (the return to park once moved the tip "into" a slab of infinite
width far from the hole and pushed the drill feed off its trajectory).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from quirobot_control.planning.tasks import load_task
from quirobot_control.simulation.bone_contact import BoneContact, Drilling

H = 2.5e-4  # s, a physics step


def drill(offset: np.ndarray, rate: float = 0.0015, depth: float = 0.002) -> BoneContact:
    """Move a tip from the entry + `offset` (m) `depth` m along the axis at `rate` m/s."""
    task = load_task("incision")
    tip = SimpleNamespace(tip=task.entry + offset)
    contact = BoneContact(tip, Drilling(task.entry, task.direction, task.bone))
    for k in range(round(depth / rate / H)):
        tip.tip = task.entry + offset + task.direction * rate * k * H
        contact(H)
    return contact


def across_the_axis(distance: float) -> np.ndarray:
    direction = load_task("incision").direction
    across = np.cross(direction, [1.0, 0.0, 0.0])
    return distance * across / np.linalg.norm(across)


def test_the_tip_on_the_axis_is_pushed_by_the_cortex():
    assert drill(np.zeros(3)).force > 10.0  # the cortex's 30-40 N, after the point's engagement


def test_the_same_motion_beside_the_bone_is_free():
    contact = drill(across_the_axis(0.02))
    assert contact.radius == pytest.approx(0.0125)  # half the 25 mm of layers
    assert contact.force == 0.0


def test_the_check_can_fail_inside_the_shaft():
    assert drill(across_the_axis(0.01)).force > 10.0
