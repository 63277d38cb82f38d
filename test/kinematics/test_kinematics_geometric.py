"""The actual machine's FK (nominal chain + geometric errors): zero errors, pinocchio on a URDF
with the perturbed joint origins and axes, straightness by hand, calibrated FK/IK round trips."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import replace

import numpy as np
import pytest

from quirobot_description import robot_parameters
from quirobot_description.geometric_errors import GeometricErrors, calibration_document, read_calibration
from quirobot_description.machine_identity import simulated_machine
from quirobot_description.parameters import JOINT_NAMES, load_parameters
from quirobot_kinematics import ApproachTarget, KinematicModel, fk, ik, kinematic_model
from quirobot_kinematics.forward import forward_kinematics
from quirobot_kinematics.geometric import ActualPositions, actual_forward_kinematics


@pytest.fixture(scope="module")
def model() -> KinematicModel:
    return KinematicModel.from_parameters(load_parameters())


def configurations(model: KinematicModel, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(model.lower, model.upper, (n, 5))


def drawn_errors(seed: int, scale: float = 1.0) -> GeometricErrors:
    tolerances = load_parameters().geometric
    errors = tolerances.sample(np.random.default_rng(seed))
    return GeometricErrors.from_vector(errors.vector() * scale)


def test_zero_errors_reproduce_the_nominal_closed_form(model):
    q = configurations(model, 500, 1)
    for feed in (0.0, 0.013):
        actual = actual_forward_kinematics(q, model, GeometricErrors.zero(), feed)
        np.testing.assert_allclose(actual, forward_kinematics(q, model, feed), rtol=0, atol=1e-12)
        np.testing.assert_allclose(
            actual_forward_kinematics(q[0], model, GeometricErrors.zero(), feed),
            forward_kinematics(q[0], model, feed),
            rtol=0,
            atol=1e-12,
        )


def test_one_model_evaluated_with_several_machines_gives_each_its_own_chain():
    """The chain's constants are memoised on the model per errors object: machines evaluated in
    turn on one model (and an equal copy of one) each give what a fresh model gives them."""
    shared = KinematicModel.from_parameters(load_parameters())
    q = configurations(shared, 50, 4)
    machines = [drawn_errors(5), drawn_errors(6), GeometricErrors.zero(), drawn_errors(5)]
    for errors in machines + machines[::-1]:
        fresh = KinematicModel.from_parameters(load_parameters())
        expected = actual_forward_kinematics(q, fresh, errors, 0.01)
        np.testing.assert_array_equal(actual_forward_kinematics(q, shared, errors, 0.01), expected)
    assert not np.allclose(
        actual_forward_kinematics(q, shared, machines[0]), actual_forward_kinematics(q, shared, machines[1])
    )


def test_a_drawn_machine_is_off_by_a_fraction_of_a_millimetre(model):
    q = configurations(model, 200, 2)
    shift = (
        actual_forward_kinematics(q, model, drawn_errors(3))[:, :3, 3]
        - forward_kinematics(q, model)[:, :3, 3]
    )
    distance = np.linalg.norm(shift, axis=1)
    assert 5e-5 < np.median(distance) < 3e-3


def test_straightness_bows_by_its_amplitude_at_mid_travel_only(model):
    amplitude = 4e-5
    errors = replace(GeometricErrors.zero(), x_straightness_y=amplitude, z_straightness_x=-amplitude)
    middle = (model.lower + model.upper) / 2.0
    for d1, d3, expected in (
        (middle[0], model.lower[2], (0.0, amplitude, 0.0)),
        (model.lower[0], middle[2], (-amplitude, 0.0, 0.0)),
        (model.upper[0], model.upper[2], (0.0, 0.0, 0.0)),
    ):
        q = np.array([d1, 0.3, d3, 0.4, 0.2])
        shift = actual_forward_kinematics(q, model, errors)[:3, 3] - forward_kinematics(q, model)[:3, 3]
        np.testing.assert_allclose(shift, expected, atol=1e-15)


def _origin(joint: ET.Element) -> ET.Element:
    origin = joint.find("origin")
    if origin is None:
        origin = ET.SubElement(joint, "origin", xyz="0 0 0", rpy="0 0 0")
    return origin


def pinocchio_frame(pin, pin_model, data, q: np.ndarray, feed: float) -> None:
    """pinocchio's forward kinematics and frame placements (in `data`) at arm joints q (5,) and the
    drill feed `feed` (m), each pinocchio joint given its value by name."""
    values = dict(zip(JOINT_NAMES, q, strict=True)) | {"drill_feed": feed}
    configuration = np.zeros(pin_model.nq)
    for joint_id in range(1, pin_model.njoints):
        configuration[pin_model.joints[joint_id].idx_q] = values[pin_model.names[joint_id]]
    pin.forwardKinematics(pin_model, data, configuration)
    pin.updateFramePlacements(pin_model, data)


def perturbed_urdf(text: str, model: KinematicModel, errors: GeometricErrors) -> str:
    """The URDF with the joint-origin errors written into <origin> and <axis> by hand, the way a
    calibration would be applied to the URDF (independent of quirobot_kinematics.geometric)."""
    root = ET.fromstring(text)
    joints = {joint.get("name"): joint for joint in root.findall("joint")}  # not ros2_control's
    e = errors

    def vector(values) -> str:
        return " ".join(repr(float(v)) for v in values)

    g = e.xy_squareness
    joints["gantry_y"].find("axis").set("xyz", vector((-math.sin(g), math.cos(g), 0.0)))
    z = np.array([math.tan(e.z_tilt_x), math.tan(e.z_tilt_y), -1.0])
    nominal_z = np.array([float(v) for v in joints["gantry_z"].find("axis").get("xyz").split()])
    joints["gantry_z"].find("axis").set("xyz", vector(z / np.linalg.norm(z) * -nominal_z[2]))
    yaw = _origin(joints["wrist_yaw"])
    yaw.set("xyz", vector((e.wrist_yaw_offset_x, e.wrist_yaw_offset_y, 0.0)))
    yaw.set("rpy", vector((e.wrist_yaw_tilt_x, e.wrist_yaw_tilt_y, 0.0)))
    pitch = _origin(joints["wrist_pitch"])
    pitch.set("xyz", vector((e.wrist_pitch_offset_x, 0.0, -(model.l4 + e.l4_error))))
    pitch.set("rpy", vector((e.wrist_pitch_tilt_x, 0.0, e.wrist_pitch_tilt_z)))
    l5 = model.l5 + e.l5_error
    _origin(joints["tool0_joint"]).set("xyz", vector((l5, 0.0, 0.0)))
    # The feed joint starts at tool0 moved by the TCP offset (tool0's axes: x_tool = y_pitch,
    # y_tool = z_pitch, z_tool = x_pitch, the rotation [[0,0,1],[1,0,0],[0,1,0]]).
    _origin(joints["drill_feed"]).set("xyz", vector((l5 + e.tcp_offset_z, e.tcp_offset_x, e.tcp_offset_y)))
    return ET.tostring(root, encoding="unicode")


@pytest.mark.engines
def test_matches_pinocchio_on_a_urdf_with_the_perturbed_joints(request, model):
    pin = pytest.importorskip("pinocchio")
    text = request.getfixturevalue("exported_urdf").read_text()
    errors = replace(
        drawn_errors(7, scale=20.0),  # large errors: a wrong sign or order shows far above rounding
        x_straightness_y=0.0,
        x_straightness_z=0.0,
        y_straightness_x=0.0,
        y_straightness_z=0.0,
        z_straightness_x=0.0,
        z_straightness_y=0.0,
    )
    pin_model = pin.buildModelFromXML(perturbed_urdf(text, model, errors))
    data = pin_model.createData()
    tip = pin_model.getFrameId("drill_tip")
    rng = np.random.default_rng(8)
    for q in configurations(model, 300, 9):
        feed = float(rng.uniform(model.feed_lower, model.feed_upper))
        pinocchio_frame(pin, pin_model, data, q, feed)
        np.testing.assert_allclose(
            data.oMf[tip].homogeneous, actual_forward_kinematics(q, model, errors, feed), atol=1e-12
        )


def test_a_calibrated_model_moves_fk_and_ik_to_the_actual_machine(model, tmp_path):
    import yaml

    errors = drawn_errors(11)
    path = tmp_path / "calibration.yaml"
    path.write_text(
        yaml.safe_dump(
            calibration_document(errors, "calibration campaign test/seed 11", simulated_machine(None))
        )
    )
    assert read_calibration(path, robot_parameters().geometric) == errors
    calibrated = kinematic_model(calibration=path)
    q = np.array([0.8, 1.1, 0.5, 1.0, 0.4])
    np.testing.assert_allclose(
        fk(q, model=calibrated), actual_forward_kinematics(q, model, errors), atol=1e-15
    )
    np.testing.assert_allclose(
        fk(q[None], model=calibrated)[0], actual_forward_kinematics(q, model, errors), atol=1e-15
    )
    target = ApproachTarget(position=(0.9, 1.0, -1.2), approach=(0.2, -0.1, -1.0))
    solved = ik(target, model=calibrated, feed=0.01)
    pose = actual_forward_kinematics(solved, model, errors, 0.01)
    np.testing.assert_allclose(pose[:3, 3], target.position, atol=1e-10)
    np.testing.assert_allclose(
        pose[:3, 2], np.array(target.approach) / np.linalg.norm(target.approach), atol=1e-10
    )
    nominal_miss = np.linalg.norm(
        actual_forward_kinematics(ik(target, model=model, feed=0.01), model, errors, 0.01)[:3, 3]
        - target.position
    )
    assert nominal_miss > 1e-4  # the nominal model misses the same target on that machine


def test_a_calibration_file_with_a_wrong_unit_is_refused_by_key(tmp_path):
    import yaml

    document = calibration_document(
        GeometricErrors.zero(), "calibration campaign test", simulated_machine(None)
    )
    document["geometric_errors"]["l4_error"]["unit"] = "mm"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(ValueError, match="l4_error: unit must be m"):
        read_calibration(path, robot_parameters().geometric)


def _calibration_file(tmp_path, errors: GeometricErrors):
    import yaml

    path = tmp_path / "calibration.yaml"
    path.write_text(
        yaml.safe_dump(calibration_document(errors, "calibration campaign test", simulated_machine(None)))
    )
    return path


def _parameter_file_with_bands_times(tmp_path, factor: float):
    """The shipped parameter file with every geometric error's tolerance band times `factor`."""
    import yaml

    from quirobot_description.parameters import DEFAULT_PARAMETER_FILE

    raw = yaml.safe_load(DEFAULT_PARAMETER_FILE.read_text())
    for leaf in raw["geometric_errors"].values():
        leaf["value"] *= factor
    path = tmp_path / "wide_bands.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _quirobot_urdf(capsys, *words: str) -> tuple[int, str, str]:
    from quirobot_cli.cli import main

    code = main(["urdf", *words])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _quirobot_export(capsys, tmp_path, *words: str) -> tuple[int, str, str]:
    """`quirobot export DIR ...` as _quirobot_urdf: (exit code, the URDF it wrote, stderr)."""
    from quirobot_cli.cli import main

    directory = tmp_path / "export"
    code = main(["export", str(directory), *words])
    captured = capsys.readouterr()
    written = directory / "robot.urdf"
    assert code != 0 or captured.out.strip() == str(written)
    return code, written.read_text() if written.exists() else "", captured.err


def _urdf_from(verb: str, capsys, tmp_path, *words: str) -> tuple[int, str, str]:
    if verb == "urdf":
        return _quirobot_urdf(capsys, *words)
    return _quirobot_export(capsys, tmp_path, *words)


@pytest.mark.engines
@pytest.mark.parametrize("verb", ["urdf", "export"])
def test_quirobot_urdf_with_a_calibration_matches_the_calibrated_fk_in_pinocchio(
    tmp_path, capsys, model, verb
):
    """The calibration file reaches the URDF: pinocchio's FK of `quirobot urdf --calibration` (and
    of the file `quirobot export --calibration` writes) is the calibrated model's FK
    (quirobot_kinematics), straightness aside (no URDF form)."""
    pin = pytest.importorskip("pinocchio")
    bowless = {name: 0.0 for name in GeometricErrors.names() if "straightness" in name}
    errors = replace(drawn_errors(13, scale=10.0), **bowless)  # large: a wrong sign shows far above 1e-9
    path = _calibration_file(tmp_path, errors)
    wide = _parameter_file_with_bands_times(tmp_path, 10.0)  # a calibration is refused outside its bands
    code, text, err = _urdf_from(
        verb, capsys, tmp_path, "--calibration", str(path), "--parameter-file", str(wide)
    )
    assert code == 0 and err == ""
    calibrated = kinematic_model(wide, calibration=path)
    pin_model = pin.buildModelFromXML(text)
    data = pin_model.createData()
    tip = pin_model.getFrameId("drill_tip")
    rng = np.random.default_rng(14)
    worst = 0.0
    for q in configurations(model, 300, 15):
        feed = float(rng.uniform(model.feed_lower, model.feed_upper))
        pinocchio_frame(pin, pin_model, data, q, feed)
        expected = fk(q, feed, model=calibrated)
        np.testing.assert_allclose(data.oMf[tip].homogeneous, expected, rtol=0, atol=1e-9)
        worst = max(worst, np.linalg.norm(expected[:3, 3] - forward_kinematics(q, model, feed)[:3, 3]))
    assert worst > 1e-3  # the calibration moved the tip by millimetres: the test sees the origins


def test_quirobot_urdf_without_a_calibration_keeps_the_nominal_origins(tmp_path, capsys):
    zero = _calibration_file(tmp_path, GeometricErrors.zero())
    _, nominal, _ = _quirobot_urdf(capsys)
    _, zeroed, _ = _quirobot_urdf(capsys, "--calibration", str(zero))
    origins = [
        [(joint.find("origin").attrib, None if joint.find("axis") is None else joint.find("axis").attrib)]
        for joint in ET.fromstring(nominal).findall("joint")
    ]
    for joint, (origin_axis,) in zip(ET.fromstring(zeroed).findall("joint"), origins, strict=True):
        origin, axis = origin_axis
        for key, value in origin.items():
            np.testing.assert_allclose(
                [float(v) for v in joint.find("origin").get(key).split()], [float(v) for v in value.split()]
            )
        if axis is not None:
            np.testing.assert_allclose(
                [float(v) for v in joint.find("axis").get("xyz").split()],
                [float(v) for v in axis["xyz"].split()],
            )


@pytest.mark.parametrize("verb", ["urdf", "export"])
def test_quirobot_urdf_says_the_straightness_it_leaves_out(tmp_path, capsys, verb):
    path = _calibration_file(tmp_path, replace(GeometricErrors.zero(), y_straightness_z=2e-5))
    code, text, err = _urdf_from(verb, capsys, tmp_path, "--calibration", str(path))
    assert code == 0 and text.startswith("<?xml")
    assert err.count("\n") == 1 and f"quirobot {verb}: y_straightness_z left out" in err


@pytest.mark.parametrize("verb", ["urdf", "export"])
def test_quirobot_urdf_refuses_a_bad_calibration_file_by_key(tmp_path, capsys, verb):
    document = calibration_document(
        GeometricErrors.zero(), "calibration campaign test", simulated_machine(None)
    )
    document["geometric_errors"]["wrist_yaw_tilt_x"]["unit"] = "deg"
    path = tmp_path / "bad.yaml"
    import yaml

    path.write_text(yaml.safe_dump(document))
    code, text, err = _urdf_from(verb, capsys, tmp_path, "--calibration", str(path))
    assert code == 2 and text == ""
    assert err.count("\n") == 1 and "wrist_yaw_tilt_x: unit must be rad" in err


def test_actual_positions_are_the_forward_kinematics_to_the_bit(model):
    """ActualPositions (terms shared between machines) gives actual_forward_kinematics' positions
    bit for bit: each error changed alone (a step of +-1e-6, and to -0.0: a term keyed by its
    constants' bytes is not shared across a signed zero), then every error at once, with a feed."""
    q = configurations(model, 40, 3)
    positions = ActualPositions(q, model)
    base = drawn_errors(5)
    machines = [base, GeometricErrors.zero(), drawn_errors(6)]
    for name in GeometricErrors.names():
        value = getattr(base, name)
        machines += [replace(base, **{name: value + step}) for step in (1e-6, -1e-6)]
        machines.append(replace(GeometricErrors.zero(), **{name: -0.0}))
    for errors in machines:
        for feed in (0.0, 0.012):
            expected = actual_forward_kinematics(q, model, errors, feed)[:, :3, 3]
            assert positions(errors, feed).tobytes() == np.ascontiguousarray(expected).tobytes()
    assert len(positions.terms) < 5 * len(machines)  # shared: fewer terms than machines' five each
