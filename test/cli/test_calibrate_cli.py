"""`quirobot calibrate --json`: the issue's keys, a file the kinematic model loads, one-line refusals."""

from __future__ import annotations

import json

import numpy as np

from quirobot_cli.cli import main
from quirobot_description import robot_parameters
from quirobot_description.geometric_errors import GeometricErrors, read_calibration_file
from quirobot_description.machine_identity import simulated_machine
from quirobot_kinematics import fk, kinematic_model


def test_calibrate_json_has_the_issues_keys_and_writes_a_loadable_file(tmp_path, capsys):
    output = tmp_path / "cal" / "calibration.yaml"
    assert main(["calibrate", "--json", "--seed", "3", "--output", str(output)]) == 0
    document = json.loads(capsys.readouterr().out)
    assert {"before", "after", "identified", "observability", "output"} <= set(document)
    for stage in ("before", "after"):
        assert set(document[stage]["position_error"]) == {"p50", "p95", "max"}
    assert document["after"]["position_error"]["p95"] < 0.2 * document["before"]["position_error"]["p95"]
    assert document["observability"] > 0.0
    assert document["output"] == str(output)
    text = output.read_text()
    assert "calibration campaign" in text and "seed 3" in text
    calibrated = kinematic_model(calibration=output)
    assert calibrated.errors == GeometricErrors(**document["identified"])
    # The file names the machine measured: simulated machine 3's drives (what drive_node's
    # simulated_machine:=3 runs), and only that one.
    machine = read_calibration_file(output, robot_parameters().geometric).machine
    assert machine == simulated_machine(3) and document["machine"] == machine.text()
    assert simulated_machine(3).differs_from(simulated_machine(3)) is None
    q = np.array([1.0, 1.0, 0.8, 2.0, 0.3])
    assert np.linalg.norm(fk(q, model=calibrated)[:3, 3] - fk(q)[:3, 3]) > 1e-5


def test_calibrate_refuses_an_unknown_tracker_in_one_line(capsys):
    try:
        main(["calibrate", "--tracker", "sonar"])
    except SystemExit as exit_info:
        assert exit_info.code == 2
    assert "invalid choice: 'sonar'" in capsys.readouterr().err


def test_register_json_gives_a_rigid_transform_and_its_errors(capsys):
    assert main(["register", "--json", "--seed", "2"]) == 0
    document = json.loads(capsys.readouterr().out)
    T, truth = np.array(document["transform"]), np.array(document["truth"])
    np.testing.assert_allclose(T[:3, :3] @ T[:3, :3].T, np.eye(3), atol=1e-12)
    assert np.linalg.norm(T[:3, 3] - truth[:3, 3]) < 2e-3  # within a few FLE of the truth
    assert 0.0 < document["fre"] < 1e-3 and 0.0 < document["tre"] < 1e-3
    assert 0.0 < document["tre_predicted"] < 5e-4
    assert document["fiducials"] == 4 and document["icp"] is False
