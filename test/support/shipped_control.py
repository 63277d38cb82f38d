"""The shipped control configuration's numbers that plans take as values (config/control.yaml)."""

from __future__ import annotations

from quirobot_control.hardware.control_config import control_configuration
from quirobot_description.parameters import DrillParameters, load_parameters

#: kg, the drill feed's effective inertia (the drilling monitor's, plan_drill_hole's feed_mass).
FEED_MASS = control_configuration(load_parameters()).joint(DrillParameters.feed_joint).effective_inertia
