"""The realistic plant's parameters (parameter file section `realistic_plant`) and their spreads.

The errors a real machine has and the controller's model does not: the wrist gearboxes' stiffness,
backlash and friction, the ball screws' axial stiffness and friction, the actuation delay, encoder
noise, the ram's and the drill bit's bending, skiving at entry and the regenerative thrust. Each
number is a {value, unit, source} leaf (read through `SourcedReader` like every other) and may
carry `distribution`: {type: uniform, low, high} or {type: normal, sigma}, in the value's unit,
the Monte-Carlo spread of `quirobot accuracy`. `sample` draws one plant from the spreads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from quirobot_description.sourced_yaml import SourcedReader

SECTION = "realistic_plant"

#: The plants a simulation runs on: "ideal" (MuJoCo's rigid bodies alone, the controller's own
#: model) or "realistic" (quirobot_control.simulation.realistic_plant, with these parameters).
PLANTS = ("ideal", "realistic")

#: The plant of `quirobot simulate` and `quirobot_control.simulate`: the realistic one, now that the
#: controller meets the targets on it (docs/accuracy.md); the ideal plant (the controller's own
#: model) stays the engine's default for the design checks.
DEFAULT_PLANT = "realistic"


@dataclass(frozen=True)
class Distribution:
    """A Monte-Carlo spread of one parameter, in its unit: uniform [low, high] or normal (sigma)."""

    type: str
    low: float = 0.0
    high: float = 0.0
    sigma: float = 0.0

    def draw(self, value: float, rng: np.random.Generator) -> float:
        """One sample around `value` (normal samples clipped at 0: every spread parameter is >= 0)."""
        if self.type == "uniform":
            return float(rng.uniform(self.low, self.high))
        return max(float(rng.normal(value, self.sigma)), 0.0)


@dataclass(frozen=True)
class PlantParameters:
    """The realistic plant (SI units; see the parameter file for each source)."""

    wrist_gear_stiffness: float  # N*m/rad, at the joint
    wrist_gear_backlash: float  # rad, total play at the joint
    wrist_gear_damping_ratio: float  # 1
    wrist_coulomb_friction: float  # N*m at the joint, motor side
    wrist_output_friction: float  # N*m, the output bearing's, load side
    wrist_viscous_friction: float  # N*m*s/rad at the joint, motor side
    screw_axial_stiffness: float  # N/m
    gantry_coulomb_friction: float  # N
    gantry_viscous_friction: float  # N*s/m
    actuation_delay: float  # s
    encoder_noise: float  # counts (standard deviation)
    load_encoder_counts_per_rev: float  # counts/rev of the wrist's load-side encoders
    ram_section_side: float  # m
    ram_wall_thickness: float  # m
    ram_free_length: float  # m
    ram_youngs_modulus: float  # Pa
    ram_modal_mass: float  # kg
    ram_damping_ratio: float  # 1
    bit_diameter: float  # m
    bit_free_length: float  # m
    bit_youngs_modulus: float  # Pa
    skiving_coefficient: float  # 1, lateral force / thrust at entry
    spindle_speed: float  # rad/s
    regenerative_stiffness: float  # N/m
    distributions: dict[str, Distribution]

    @property
    def ram_stiffness(self) -> float:
        """Lateral stiffness (N/m) of the ram at the wrist: cantilever 3 E I / L^3, square tube."""
        outer, inner = self.ram_section_side, self.ram_section_side - 2.0 * self.ram_wall_thickness
        second_moment = (outer**4 - inner**4) / 12.0
        return 3.0 * self.ram_youngs_modulus * second_moment / self.ram_free_length**3

    @property
    def bit_stiffness(self) -> float:
        """Lateral stiffness (N/m) of the drill bit at its tip: cantilever 3 E I / L^3, round bar."""
        second_moment = math.pi * self.bit_diameter**4 / 64.0
        return 3.0 * self.bit_youngs_modulus * second_moment / self.bit_free_length**3

    @property
    def spindle_period(self) -> float:
        """One spindle revolution, s: the regenerative delay."""
        return 2.0 * math.pi / self.spindle_speed

    def sample(self, rng: np.random.Generator) -> PlantParameters:
        """One plant drawn from the distributions (the parameters without one stay as they are)."""
        drawn = {name: spread.draw(getattr(self, name), rng) for name, spread in self.distributions.items()}
        return replace(self, **drawn)


def _distribution(reader: SourcedReader, key: str, leaf: dict[str, Any]) -> Distribution | None:
    spread = leaf.get("distribution")
    if spread is None:
        return None
    where = f"{key}.distribution"
    if not isinstance(spread, dict) or spread.get("type") not in ("uniform", "normal"):
        raise reader.fail(where, "must be {type: uniform, low, high} or {type: normal, sigma}")
    names = ("low", "high") if spread["type"] == "uniform" else ("sigma",)
    values = {}
    for name in names:
        item = spread.get(name)
        if isinstance(item, bool) or not isinstance(item, (int, float)) or not math.isfinite(item):
            raise reader.fail(where, f"{name} must be a finite number, got {item!r}")
        values[name] = float(item)
    if spread["type"] == "uniform" and not 0.0 <= values["low"] <= values["high"]:
        raise reader.fail(where, f"needs 0 <= low <= high, got {values['low']} and {values['high']}")
    if spread["type"] == "normal" and values["sigma"] < 0.0:
        raise reader.fail(where, f"sigma must be >= 0, got {values['sigma']}")
    return Distribution(type=spread["type"], **values)


def read_plant(reader: SourcedReader) -> PlantParameters:
    """The `realistic_plant` section: every number > 0 (skiving coefficient and noise >= 0)."""
    values: dict[str, float] = {}
    distributions: dict[str, Distribution] = {}
    for item in fields(PlantParameters):
        if item.name == "distributions":
            continue
        key = f"{SECTION}.{item.name}"
        may_be_zero = item.name in ("skiving_coefficient", "encoder_noise", "actuation_delay")
        values[item.name] = reader.number(key, positive=not may_be_zero, non_negative=may_be_zero)
        spread = _distribution(reader, key, reader.node(key))
        if spread is not None:
            distributions[item.name] = spread
    if values["ram_wall_thickness"] * 2.0 >= values["ram_section_side"]:
        raise reader.fail(f"{SECTION}.ram_wall_thickness", "leaves no hollow in the ram's section")
    return PlantParameters(**values, distributions=distributions)
