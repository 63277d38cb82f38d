"""Visual meshes of the links a primitive misrepresents, made from the parameter file (numpy only).

The URDF draws these links with the meshes of quirobot_description/meshes (binary STL, metres, in
the link's own frame, or the beam's for the structure) and keeps the primitives for collision and
inertia, as the URDF tutorials' CAD exporters do:

- structure_guide_x, structure_guide_y, structure_leg: the gantry's 80 mm square profile
  (structure.guide_section) with a slot in each face, one mesh per beam length, centred on the beam;
- x_carriage: the bridge, the same slotted profile at the bridge's section, along y;
- wrist_yaw_link: link 4, a round column (r4) ending in a fork whose cheeks hold the theta5 axis;
- wrist_pitch_link: link 5, the drill housing (r5) tapering to the feed's nose at tool0;
- drill_bit: the feed's moving part, spindle, chuck (tools.drill.bit_radius) and twist drill
  (realistic_plant.bit_diameter, bit_free_length) whose point is at the link origin (the tip);
- arthroscope: the camera coupler at tool0 with its light post, and the sheath
  (tools.arthroscope.scope_radius) to the tip.

The y carriage and the ram are boxes in the machine too: they keep their primitives.

Why committed files and not a build step: the meshes must be there for a pip install (no build
step), in a source checkout (the tests and `quirobot urdf` run without colcon) and in share/quirobot
after colcon, and the three builds already install files listed in install_manifest.json; a CMake
step would need numpy at build time and a second code path. `python -m quirobot_description.
visual_meshes --write` rewrites them, and a test fails when a file differs by one byte from what
the parameter file makes. The STL is written deterministically (no date in the header, float32
vertices in a fixed order), so equal parameters give equal bytes.

Each mesh is one or more closed triangle shells (mesh_solids.py: every edge shared by exactly two
triangles of a shell, counter-clockwise seen from outside), written by stl.py. Circles are regular
polygons of meshes.circle_segments facets (a multiple of 4) with vertices on the circle, so a
mesh's bounding box is the part's.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from quirobot_description.data_files import find_data_file
from quirobot_description.mesh_solids import MeshError, extrude, fork, revolve, slotted_profile
from quirobot_description.parameters import RobotParameters, load_parameters
from quirobot_description.stl import stl_bytes

#: Where the generated meshes live (package data; installed to share/quirobot/meshes too).
MESH_DIRECTORY = Path(__file__).resolve().parent / "meshes"
#: The URDF names a mesh MESH_PREFIX + NAME.stl (common.xacro's link_visual).
MESH_PREFIX = "package://quirobot/meshes/"


@dataclass(frozen=True)
class MeshDimensions:
    """Every number the meshes use (m, rad), taken from the parameter file; two parameter files
    with equal MeshDimensions make the same meshes."""

    segments: int
    guide_section: float  # structure.guide_section, the square profile's side
    guide_x_length: float  # the beams along x (guides and top frame), as structure.xacro
    guide_y_length: float  # the y beams between the x guides
    leg_length: float  # structure.ceiling_height
    slot_width: float
    slot_depth: float
    bridge_size: tuple[float, float, float]  # links.x_carriage.size, x y z
    bridge_origin: tuple[float, float, float]  # links.x_carriage.origin
    link4_radius: float
    link4_length: float
    link5_radius: float
    link5_length: float
    fork_length: float
    fork_clearance: float
    nose_length: float
    nose_radius: float
    moving_radius: float  # tools.drill.bit_radius: the chuck's
    moving_length: float  # tools.drill.bit_length: spindle, chuck and bit
    spindle_radius: float
    chuck_length: float
    bit_radius: float  # realistic_plant.bit_diameter / 2
    bit_free_length: float  # realistic_plant.bit_free_length
    bit_point_angle: float
    scope_radius: float
    scope_length: float
    head_radius: float
    head_length: float
    post_radius: float
    post_length: float

    @classmethod
    def from_parameters(cls, parameters: RobotParameters) -> MeshDimensions:
        structure, meshes, drill = parameters.structure, parameters.meshes, parameters.drill
        x, y = parameters.joint("gantry_x"), parameters.joint("gantry_y")
        margin, g = structure.guide_margin, structure.guide_section
        bridge, link4, link5 = (
            parameters.link(n) for n in ("x_carriage", "wrist_yaw_link", "wrist_pitch_link")
        )
        return cls(
            segments=meshes.circle_segments,
            guide_section=g,
            guide_x_length=x.upper - x.lower + 2 * margin + g,
            guide_y_length=y.upper - y.lower + 2 * margin - g,
            leg_length=structure.ceiling_height,
            slot_width=meshes.profile_slot_width,
            slot_depth=meshes.profile_slot_depth,
            bridge_size=tuple(float(v) for v in bridge.size),
            bridge_origin=tuple(float(v) for v in bridge.origin),
            link4_radius=link4.radius,
            link4_length=link4.length,
            link5_radius=link5.radius,
            link5_length=link5.length,
            fork_length=meshes.fork_length,
            fork_clearance=meshes.fork_clearance,
            nose_length=meshes.housing_nose_length,
            nose_radius=meshes.housing_nose_radius,
            moving_radius=drill.bit_radius,
            moving_length=drill.bit_length,
            spindle_radius=meshes.spindle_radius,
            chuck_length=meshes.chuck_length,
            bit_radius=parameters.plant.bit_diameter / 2,
            bit_free_length=parameters.plant.bit_free_length,
            bit_point_angle=meshes.bit_point_angle,
            scope_radius=parameters.arthroscope.scope_radius,
            scope_length=parameters.arthroscope.scope_length,
            head_radius=meshes.scope_head_radius,
            head_length=meshes.scope_head_length,
            post_radius=meshes.light_post_radius,
            post_length=meshes.light_post_length,
        )


# --- The meshes ------------------------------------------------------------------------------------


def _beam(d: MeshDimensions, axis: str, length: float) -> np.ndarray:
    profile = slotted_profile(d.guide_section, d.guide_section, d.slot_width, d.slot_depth)
    return extrude(profile, -length / 2, length / 2, axis)


def _bridge(d: MeshDimensions) -> np.ndarray:
    """The bridge along y, the slotted profile at its (x, z) section, where links.x_carriage's box is."""
    (sx, sy, sz), origin = d.bridge_size, d.bridge_origin
    profile = slotted_profile(sz, sx, d.slot_width, d.slot_depth)  # (u, v) = (z, x) about y
    return extrude(profile, -sy / 2, sy / 2, "y", offset=origin)


def _link4(d: MeshDimensions) -> np.ndarray:
    gap = 2 * (d.link5_radius + d.fork_clearance)
    return fork(d.link4_radius, d.link4_length, gap, d.fork_length, d.segments)


def _link5(d: MeshDimensions) -> np.ndarray:
    """The drill housing along x from the theta5 axis to tool0, tapered to the nose."""
    if not (d.nose_radius < d.link5_radius and d.nose_length < d.link5_length):
        raise MeshError("the housing's nose must be narrower and shorter than link 5")
    r, length = d.link5_radius, d.link5_length
    profile = [(0.0, 0.0), (0.0, r), (length - d.nose_length, r), (length, d.nose_radius), (length, 0.0)]
    return revolve(profile, "x", d.segments)


def _drill_bit(d: MeshDimensions) -> np.ndarray:
    """Spindle, chuck and twist drill along z, the point at z = 0 (the drill_tip frame)."""
    spindle = d.moving_length - d.chuck_length - d.bit_free_length
    point = d.bit_radius / math.tan(d.bit_point_angle / 2)
    if (
        spindle <= 0.0
        or not (d.bit_radius < d.spindle_radius < d.moving_radius)
        or point >= d.bit_free_length
    ):
        raise MeshError("spindle, chuck and bit do not fit tools.drill.bit_length and bit_radius")
    back, chuck, bit = -d.moving_length, -d.bit_free_length - d.chuck_length, -d.bit_free_length
    profile = [
        (back, 0.0),
        (back, d.spindle_radius),
        (chuck, d.spindle_radius),
        (chuck, d.moving_radius),
        (bit, d.moving_radius),
        (bit, d.bit_radius),
        (-point, d.bit_radius),
        (0.0, 0.0),
    ]
    return revolve(profile, "z", d.segments)


def _arthroscope(d: MeshDimensions) -> np.ndarray:
    """The camera coupler (z from 0) with its light post along +x, then the sheath to the tip."""
    if not (
        d.scope_radius < d.head_radius
        and d.head_length < d.scope_length
        and 2 * d.post_radius < d.head_length
    ):
        raise MeshError("the arthroscope's coupler and light post do not fit its sheath")
    body = revolve(
        [
            (0.0, 0.0),
            (0.0, d.head_radius),
            (d.head_length, d.head_radius),
            (d.head_length, d.scope_radius),
            (d.scope_length, d.scope_radius),
            (d.scope_length, 0.0),
        ],
        "z",
        d.segments,
    )
    post_end = d.head_radius + d.post_length
    post = revolve(
        [(0.0, 0.0), (0.0, d.post_radius), (post_end, d.post_radius), (post_end, 0.0)],
        "x",
        d.segments,
        offset=(0.0, 0.0, d.head_length / 2),
    )
    return np.concatenate([body, post])


#: Mesh name -> its builder; the URDF names each MESH_PREFIX + NAME.stl.
BUILDERS: dict[str, Callable[[MeshDimensions], np.ndarray]] = {
    "structure_guide_x": lambda d: _beam(d, "x", d.guide_x_length),
    "structure_guide_y": lambda d: _beam(d, "y", d.guide_y_length),
    "structure_leg": lambda d: _beam(d, "z", d.leg_length),
    "x_carriage": _bridge,
    "wrist_yaw_link": _link4,
    "wrist_pitch_link": _link5,
    "drill_bit": _drill_bit,
    "arthroscope": _arthroscope,
}


def build_meshes(parameters: RobotParameters | None = None) -> dict[str, np.ndarray]:
    """Every mesh as (F, 3, 3) triangles (m), from `parameters` (default: the shipped file)."""
    dimensions = MeshDimensions.from_parameters(parameters or load_parameters())
    return {name: build(dimensions) for name, build in BUILDERS.items()}


# --- Binary STL ----------------------------------------------------------------------------------


def resolve_mesh(filename: str) -> Path:
    """The file a URDF mesh filename names: package://quirobot/X through data_files (wherever the
    package is installed), file:///X or /X as is. Raises MeshError for anything else."""
    if filename.startswith("package://quirobot/"):
        return find_data_file(filename.removeprefix("package://quirobot/"))
    path = Path(filename.removeprefix("file://"))
    if not path.is_absolute():
        raise MeshError(f"mesh {filename!r} is neither package://quirobot/... nor an absolute path")
    return path


def write_meshes(
    directory: str | Path = MESH_DIRECTORY, parameters: RobotParameters | None = None
) -> list[Path]:
    """Write every mesh as DIRECTORY/NAME.stl; return the paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, triangles in build_meshes(parameters).items():
        path = directory / f"{name}.stl"
        path.write_bytes(stl_bytes(triangles))
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the URDF's visual meshes from the parameter file.")
    parser.add_argument("--write", action="store_true", help=f"write them into {MESH_DIRECTORY}")
    parser.add_argument("--parameter-file", type=Path, help="parameter YAML (default: the shipped one)")
    args = parser.parse_args(argv)
    parameters = load_parameters(args.parameter_file)
    if not args.write:
        stale = [
            name
            for name, triangles in build_meshes(parameters).items()
            if not (MESH_DIRECTORY / f"{name}.stl").is_file()
            or (MESH_DIRECTORY / f"{name}.stl").read_bytes() != stl_bytes(triangles)
        ]
        print(f"stale meshes: {', '.join(stale)}" if stale else "meshes up to date")
        return 1 if stale else 0
    for path in write_meshes(parameters=parameters):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
