"""Shared by the drilling tests: a bone's quasi-static thrust profile written out from its layers
(the point's engaged fraction per layer, as models.bone states it), independent of BoneThrust."""

from __future__ import annotations

import numpy as np


def engaged_thrust(depth: np.ndarray, bone, rate: float) -> np.ndarray:
    """(N,) N at tip depths (N,) m and feed rate m/s: F_ref (v / v_ref)^n times the engagement."""
    engaged = np.zeros_like(depth)
    start = 0.0
    for layer in bone.layers:
        end = start + layer.thickness
        low = np.maximum(depth - bone.point_length, start)
        engaged += layer.thrust_factor * np.clip(np.minimum(depth, end) - low, 0.0, None) / bone.point_length
        start = end
    scale = (rate / bone.reference_feed_rate) ** bone.feed_rate_exponent
    return bone.reference_thrust * scale * engaged
