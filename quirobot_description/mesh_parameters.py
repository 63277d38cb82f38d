"""The visual meshes' own dimensions (parameter file `meshes.*`), read through `SourcedReader` like
every other number. The meshes also use the links', the structure's and the tools' dimensions;
visual_meshes.MeshDimensions gathers them all."""

from __future__ import annotations

from dataclasses import dataclass, fields

from quirobot_description.sourced_yaml import SourcedReader

SECTION = "meshes"


@dataclass(frozen=True)
class MeshParameters:
    """Drawing-only dimensions (SI units; the parameter file gives each source)."""

    circle_segments: int  # facets per circle, a multiple of 4 (the bounding box is then exact)
    profile_slot_width: float  # m, slot opening on each face of a slotted profile
    profile_slot_depth: float  # m, from the face to the slot's floor
    fork_length: float  # m, link 4's fork cheeks above the theta5 axis
    fork_clearance: float  # m, between link 5 and each cheek
    housing_nose_length: float  # m, link 5's taper to the nose at tool0
    housing_nose_radius: float  # m, the nose's radius at tool0
    spindle_radius: float  # m, the drill spindle behind the chuck
    chuck_length: float  # m, the chuck (radius tools.drill.bit_radius)
    bit_point_angle: float  # rad, the twist drill's point angle
    scope_head_radius: float  # m, the arthroscope's camera coupler
    scope_head_length: float  # m
    light_post_radius: float  # m
    light_post_length: float  # m, out of the coupler's surface


def read_meshes(reader: SourcedReader) -> MeshParameters:
    """The `meshes` section: every length > 0, circle_segments a multiple of 4 (the facets then
    reach the circle's extremes on both axes, so a mesh's bounding box is the part's)."""
    values: dict[str, float | int] = {}
    for item in fields(MeshParameters):
        key = f"{SECTION}.{item.name}"
        if item.name == "circle_segments":
            values[item.name] = reader.whole(key, 8, 256)
            if values[item.name] % 4:
                raise reader.fail(key, f"must be a multiple of 4, got {values[item.name]}")
        else:
            values[item.name] = reader.number(key, positive=True)
    return MeshParameters(**values)  # type: ignore[arg-type]
