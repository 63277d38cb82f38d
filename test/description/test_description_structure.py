"""The fixed structure (base_link) carries the mass of its beams, as Gazebo needs.

Gazebo's URDF-to-SDF conversion drops a link without mass and everything below it
(test_gazebo_sdf.py); base_link's inertial is that of its collision boxes at the profiles' mean
density. Cross-checked against pinocchio's composition of box inertias (an independent engine),
and `quirobot check` must notice a base_link inertial that is not its geometry's.
"""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest
import yaml

from quirobot_description.inertia import inertia_problems
from quirobot_description.parameters import DEFAULT_PARAMETER_FILE, ParameterError, load_parameters
from quirobot_description.urdf import robot_description
from quirobot_description.validation import FAIL, PASS, check_urdf, link_inertia, origin_transform

pytestmark = pytest.mark.engines


@pytest.fixture(scope="module")
def base_link() -> ET.Element:
    root = ET.fromstring(robot_description("drill", "gazebo"))
    return next(link for link in root.findall("link") if link.get("name") == "base_link")


def _boxes(link: ET.Element) -> list[tuple[np.ndarray, np.ndarray]]:
    """(centre (3,), size (3,)) of every collision box of the link, in m."""
    boxes = []
    for collision in link.findall("collision"):
        frame = origin_transform(collision, "collision")
        assert np.allclose(frame[:3, :3], np.eye(3)), "the beams are axis-aligned"
        size = np.array([float(v) for v in collision.find("geometry/box").get("size").split()])
        boxes.append((frame[:3, 3], size))
    return boxes


def test_base_link_mass_is_its_beams_at_the_profile_density(base_link, parameters):
    s = parameters.structure
    boxes = _boxes(base_link)
    assert len(boxes) == 12  # 4 guide-plane beams, 4 legs, 4 top-frame beams
    mass, _, _ = link_inertia(base_link, "base_link")
    volume = sum(float(np.prod(size)) for _, size in boxes)
    assert mass == pytest.approx(s.density * s.section_fill * volume, rel=1e-12)
    # the frame spans the travel plus the margins: 4 * g^2 * (x span + y span between + legs)
    g, m, h = s.guide_section, s.guide_margin, s.ceiling_height
    x_span = parameters.joint("gantry_x").upper - parameters.joint("gantry_x").lower + 2 * m
    y_span = parameters.joint("gantry_y").upper - parameters.joint("gantry_y").lower + 2 * m
    assert volume == pytest.approx(4 * g**2 * ((x_span + g) + (y_span - g) + h), rel=1e-12)


def test_no_two_beams_overlap(base_link):
    """Each cubic metre counted once: the y end beams fit between the x guides."""
    for (c1, s1), (c2, s2) in itertools.combinations(_boxes(base_link), 2):
        overlap = np.minimum(c1 + s1 / 2, c2 + s2 / 2) - np.maximum(c1 - s1 / 2, c2 - s2 / 2)
        assert np.any(overlap <= 1e-12), f"beams at {c1} and {c2} overlap by {overlap}"


def test_base_link_inertial_is_pinocchios_composition_of_its_boxes(base_link):
    mass, com, inertia = link_inertia(base_link, "base_link")
    boxes = _boxes(base_link)
    volume = sum(float(np.prod(size)) for _, size in boxes)
    total = pin.Inertia.Zero()
    for centre, size in boxes:
        part = mass * float(np.prod(size)) / volume
        total += pin.SE3(np.eye(3), centre).act(pin.Inertia.FromBox(part, *size))
    assert total.mass == pytest.approx(mass, rel=1e-12)
    assert np.allclose(total.lever, com, atol=1e-12)
    assert np.allclose(total.inertia, inertia, rtol=0, atol=1e-9 * np.abs(inertia).max())
    assert inertia_problems(inertia) == []
    assert np.all(np.linalg.eigvalsh(inertia) > 0)


def _with_base_link(text: str, change) -> str:
    root = ET.fromstring(text)
    change(next(link for link in root.findall("link") if link.get("name") == "base_link"))
    return ET.tostring(root, encoding="unicode")


def _inertial_stage(text: str, parameters):
    return next(r for r in check_urdf(text, parameters, samples=20) if r.name == "inertial")


def test_check_accepts_the_shipped_base_link_and_refuses_a_guessed_one(parameters):
    text = robot_description("drill", "gazebo")
    assert _inertial_stage(text, parameters).status == PASS

    def heavier_top(link):
        inertia = link.find("inertial/inertia")
        inertia.set("ixx", str(1.1 * float(inertia.get("ixx"))))

    def centre_on_the_floor(link):
        origin = link.find("inertial/origin")
        x, y, _ = origin.get("xyz").split()
        origin.set("xyz", f"{x} {y} 0")

    for change, words in (
        (heavier_top, ("base_link", "ixx", "uniform density")),
        (centre_on_the_floor, ("base_link", "centroid")),
    ):
        result = _inertial_stage(_with_base_link(text, change), parameters)
        assert result.status == FAIL
        assert any(all(word in problem for word in words) for problem in result.problems), result.problems


@pytest.mark.parametrize(("value", "words"), [(1.5, "must be in (0, 1]"), (0.0, "must be > 0")])
def test_section_fill_outside_0_1_is_refused_by_name(tmp_path, value, words):
    raw = yaml.safe_load(DEFAULT_PARAMETER_FILE.read_text())
    raw["structure"]["section_fill"]["value"] = value
    path = tmp_path / "fill.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ParameterError, match=r"structure\.section_fill") as error:
        load_parameters(path)
    assert words in str(error.value)
