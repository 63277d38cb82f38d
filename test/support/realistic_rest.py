"""The compensated realistic plant at rest, as the plant's tests build it."""

from __future__ import annotations

import numpy as np

from quirobot_control.drive_simulators.simulated_drive import drive_for_joint
from quirobot_control.simulation.realistic_plant import RealisticPlant
from quirobot_description.parameters import axes_for

#: The pose (m, rad: axes_for("drill") order) the plant is reset to.
REST_POSE = (0.8, 0.9, 1.0, 1.5, 0.5, 0.01)


def realistic_plant_at_rest(parameters, seed: int = 0, **options) -> RealisticPlant:
    """The compensated realistic plant (0.25 ms substeps, its encoders' noise from `seed`) reset to
    REST_POSE; `options` go to RealisticPlant (e.g. geometric=)."""
    plant = RealisticPlant(
        parameters,
        parameters.plant,
        [drive_for_joint(parameters, name) for name in axes_for("drill")],
        0.00025,
        compensated=True,
        rng=np.random.default_rng(seed),
        **options,
    )
    plant.reset(np.array(REST_POSE))
    return plant
