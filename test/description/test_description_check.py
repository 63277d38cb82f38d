"""`quirobot check`: passes on every shipped combination, fails naming the fault on broken copies."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable

import pytest

from quirobot_cli.cli import main
from quirobot_description.urdf import HARDWARE, TOOLS, robot_description
from quirobot_description.validation import FAIL, PASS, SKIP, STAGES, check_urdf


@pytest.fixture(scope="module")
def drill_mock() -> str:
    return robot_description("drill", "mock")


@pytest.mark.parametrize("hardware", HARDWARE)
@pytest.mark.parametrize("tool", TOOLS)
def test_every_tool_and_hardware_passes(parameters, reference_fk, tool, hardware):
    results = check_urdf(
        robot_description(tool, hardware), parameters, reference_fk=reference_fk, samples=200
    )
    assert [r.name for r in results] == list(STAGES)
    assert [(r.name, r.status, r.problems) for r in results if r.status != PASS] == []


def test_without_a_reference_fk_the_kinematics_stage_is_skipped(parameters, drill_mock):
    """The description does not import the kinematics: the reference T is passed in, or not."""
    results = {r.name: r for r in check_urdf(drill_mock, parameters, samples=10)}
    assert (results["kinematics"].status, results["kinematics"].note) == (SKIP, "no reference FK given")
    assert all(r.status == PASS for name, r in results.items() if name != "kinematics")


def test_the_kinematics_stage_compares_with_the_reference_it_is_given(parameters, reference_fk, drill_mock):
    """A reference 1 mm off in x fails the stage by that amount: the given callable is the reference."""

    def shifted(q):
        pose = reference_fk(q).copy()
        pose[0, 3] += 1e-3
        return pose

    stage = next(
        r
        for r in check_urdf(drill_mock, parameters, reference_fk=shifted, samples=10)
        if r.name == "kinematics"
    )
    assert stage.status == FAIL
    assert any("tool0" in problem and "0.001 m" in problem for problem in stage.problems), stage.problems


def test_cli_check_passes_on_shipped_description(capsys):
    assert main(["check", "--samples", "100"]) == 0
    out = capsys.readouterr().out
    assert "9 of 9 passed" in out
    assert "FAIL" not in out


def _element(root: ET.Element, tag: str, name: str) -> ET.Element:
    found = [e for e in root.findall(tag) if e.get("name") == name]
    assert len(found) == 1, f"fixture lost {tag} {name}"
    return found[0]


def _bad_inertia(root):
    _element(root, "link", "z_ram").find("inertial/inertia").set("ixx", "-1.0")


def _triangle(root):
    inertia = _element(root, "link", "wrist_yaw_link").find("inertial/inertia")
    inertia.set("ixx", "0.01")
    inertia.set("iyy", "0.01")
    inertia.set("izz", "0.5")


def _guessed_inertia(root):
    # physically possible, but not the inertia of the link's own box: "never guessed"
    inertia = _element(root, "link", "y_carriage").find("inertial/inertia")
    inertia.set("izz", str(1.2 * float(inertia.get("izz"))))


def _com_outside(root):
    _element(root, "link", "x_carriage").find("inertial/origin").set("xyz", "0 5.0 0")


def _zero_mass(root):
    _element(root, "link", "wrist_pitch_link").find("inertial/mass").set("value", "0")


def _loop(root):
    joint = ET.SubElement(root, "joint", {"name": "loop_joint", "type": "fixed"})
    ET.SubElement(joint, "parent", {"link": "drill_tip"})
    ET.SubElement(joint, "child", {"link": "world"})


def _two_parents(root):
    joint = ET.SubElement(root, "joint", {"name": "extra_joint", "type": "fixed"})
    ET.SubElement(joint, "parent", {"link": "tool0"})
    ET.SubElement(joint, "child", {"link": "x_carriage"})


def _missing_link(root):
    root.remove(_element(root, "link", "y_carriage"))


def _non_unit_axis(root):
    _element(root, "joint", "gantry_y").find("axis").set("xyz", "0 2 0")


def _limits_reversed(root):
    limit = _element(root, "joint", "wrist_pitch").find("limit")
    lower, upper = limit.get("lower"), limit.get("upper")
    limit.set("lower", upper)
    limit.set("upper", lower)


def _zero_effort(root):
    _element(root, "joint", "gantry_z").find("limit").set("effort", "0")


def _duplicate_link(root):
    ET.SubElement(root, "link", {"name": "tool0"})


def _no_visual(root):
    link = _element(root, "link", "wrist_yaw_link")
    link.remove(link.find("visual"))


def _mesh_outside_the_folder(root):
    _element(root, "link", "wrist_yaw_link").find("visual/geometry/mesh").set("filename", "../wrist.stl")


def _unknown_mesh(root):
    mesh = _element(root, "link", "drill_bit").find("visual/geometry/mesh")
    mesh.set("filename", "package://quirobot/meshes/drill.stl")


def _no_collision(root):
    link = _element(root, "link", "drill_bit")
    link.remove(link.find("collision"))


def _bad_geometry(root):
    _element(root, "link", "z_ram").find("collision/geometry/box").set("size", "0.1 -0.1 2.2")


def _wrong_tool_frame(root):
    _element(root, "joint", "tool0_joint").find("origin").set("xyz", "0.25 0 0")


def _renamed_tool_frame(root):
    _element(root, "link", "tool0").set("name", "tool_frame")
    for element in root.iter():
        if element.tag in ("parent", "child") and element.get("link") == "tool0":
            element.set("link", "tool_frame")


def _missing_ros2_control_joint(root):
    system = root.find("ros2_control")
    system.remove(_element(system, "joint", "drill_feed"))


def _effort_and_position(root):
    joint = _element(root.find("ros2_control"), "joint", "wrist_yaw")
    ET.SubElement(joint, "command_interface", {"name": "effort"})


# (break, stage that must fail, words its message must contain: the link/joint and the number)
BROKEN: list[tuple[Callable[[ET.Element], None], str, tuple[str, ...]]] = [
    (_bad_inertia, "inertial", ("z_ram", "positive-definite", "-1")),
    (_triangle, "inertial", ("wrist_yaw_link", "triangle", "0.5")),
    (_guessed_inertia, "inertial", ("y_carriage", "izz", "box")),
    (_com_outside, "inertial", ("x_carriage", "outside", "5")),
    (_zero_mass, "inertial", ("wrist_pitch_link", "mass 0")),
    (_loop, "urdf", ("loop",)),
    (_two_parents, "urdf", ("x_carriage", "two parents")),
    (_missing_link, "urdf", ("gantry_y", "y_carriage", "does not exist")),
    (_non_unit_axis, "urdf", ("gantry_y", "unit", "norm 2")),
    (_limits_reversed, "urdf", ("wrist_pitch", "3.92699", "-1.309")),
    (_zero_effort, "urdf", ("gantry_z", "effort", "0")),
    (_duplicate_link, "urdf", ("tool0", "twice")),
    (_no_visual, "visual", ("wrist_yaw_link", "<visual>")),
    (_mesh_outside_the_folder, "visual", ("wrist_yaw_link", "../wrist.stl", "URDF's folder")),
    (_unknown_mesh, "visual", ("drill_bit", "meshes/drill.stl", "not among")),
    (_no_collision, "collision", ("drill_bit", "<collision>")),
    (_bad_geometry, "collision", ("z_ram", "size")),
    (_wrong_tool_frame, "kinematics", ("tool0", "0.05 m")),
    (_renamed_tool_frame, "kinematics", ("tool0", "missing")),
    (_missing_ros2_control_joint, "ros2_control", ("drill_feed",)),
    (_effort_and_position, "ros2_control", ("wrist_yaw", "effort")),
]


@pytest.mark.parametrize(("breaker", "stage", "words"), BROKEN, ids=[b[0].__name__[1:] for b in BROKEN])
def test_check_fails_on_broken_copy_naming_the_fault(drill_mock, tmp_path, capsys, breaker, stage, words):
    root = ET.fromstring(drill_mock)
    breaker(root)
    path = tmp_path / "broken.urdf"
    path.write_text(ET.tostring(root, encoding="unicode"))
    assert main(["check", "--urdf", str(path), "--samples", "50"]) == 1
    out = capsys.readouterr().out
    stage_line = next(line for line in out.splitlines() if line.strip().startswith(stage + " "))
    assert FAIL in stage_line, out
    problems = [line.strip() for line in out.splitlines() if line.strip().startswith(f"{stage}: ")]
    assert any(all(word in problem for word in words) for problem in problems), out


def test_check_fails_on_malformed_xml(tmp_path, capsys, drill_mock):
    path = tmp_path / "truncated.urdf"
    path.write_text(drill_mock[: len(drill_mock) // 2])
    assert main(["check", "--urdf", str(path)]) == 1
    out = capsys.readouterr().out
    assert "xml           FAIL" in out
    assert "urdf          SKIP" in out


def test_check_of_missing_file_is_a_one_line_error(tmp_path, capsys):
    assert main(["check", "--urdf", str(tmp_path / "nope.urdf")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("quirobot check: error:") and "nope.urdf" in err and "\n" not in err
