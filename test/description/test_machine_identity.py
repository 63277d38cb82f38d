"""Which machine a calibration belongs to (quirobot_description.machine_identity): its drives'
serial numbers (0x1018:04), in the calibration file and against the drives on the bus."""

from __future__ import annotations

import pytest
import yaml

from quirobot_description import robot_parameters
from quirobot_description.geometric_errors import (
    CalibrationFileError,
    GeometricErrors,
    calibration_document,
    read_calibration_file,
)
from quirobot_description.machine_identity import (
    DRIVE_JOINTS,
    MAX_SERIAL,
    MachineIdentity,
    simulated_machine,
)


def test_each_simulated_machine_has_drives_of_its_own():
    machines = [simulated_machine(seed) for seed in (None, 0, 1, 3, 4, 2**24 - 2)]
    serials = [serial for machine in machines for _, serial in machine.serials]
    assert len(set(serials)) == len(serials) and 0 not in serials and max(serials) <= MAX_SERIAL
    assert [joint for joint, _ in machines[0].serials] == list(DRIVE_JOINTS)
    for machine in machines:
        assert MachineIdentity.from_text(machine.text()) == machine
    with pytest.raises(ValueError, match="seed must be in"):
        simulated_machine(2**24 - 1)


def test_drives_are_the_calibrated_machine_only_with_every_serial_number_the_same():
    calibrated = simulated_machine(3)
    assert calibrated.differs_from(simulated_machine(3)) is None
    assert calibrated.differs_from(simulated_machine(3, DRIVE_JOINTS[:5])) is None  # no feed drive
    assert calibrated.differs_from(simulated_machine(4)) == (
        "drive gantry_x has serial number 0x00000501, the calibrated machine's 0x00000401"
    )
    one_replaced = MachineIdentity.of({**dict(calibrated.serials), "wrist_pitch": 0x5EED0005})
    assert "drive wrist_pitch has serial number 0x5EED0005" in calibrated.differs_from(one_replaced)
    arm_only = MachineIdentity.of(dict(calibrated.serials[:5]))
    assert arm_only.differs_from(calibrated) == (
        "drive drill_feed (serial 0x00000406) is not one of the calibrated machine's"
    )
    unprogrammed = MachineIdentity.of(dict.fromkeys(DRIVE_JOINTS, 0))
    assert "serial number 0 (none programmed)" in unprogrammed.differs_from(unprogrammed)


@pytest.mark.parametrize(
    ("serials", "why"),
    [
        ({"gantry_w": 1}, "no drive 'gantry_w'"),
        ({"gantry_x": -1}, "whole number in"),
        ({"gantry_x": 2**32}, "whole number in"),
        ({"gantry_x": True}, "whole number in"),
        ({"gantry_x": 1.5}, "whole number in"),
        ({}, "no drive serial number"),
    ],
)
def test_an_identity_that_names_no_drive_of_this_robot_is_refused(serials, why):
    with pytest.raises(ValueError, match=why):
        MachineIdentity.of(serials)


def test_from_text_refuses_what_is_not_joint_equals_serial():
    with pytest.raises(ValueError, match="is not joint=serial number"):
        MachineIdentity.from_text("gantry_x=0x1 gantry_y")


def _file(tmp_path, document: dict):
    path = tmp_path / "calibration.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def test_a_calibration_file_names_its_machine_and_is_refused_without_one(tmp_path):
    tolerances = robot_parameters().geometric
    document = calibration_document(GeometricErrors.zero(), "campaign test", simulated_machine(7))
    assert read_calibration_file(_file(tmp_path, document), tolerances).machine == simulated_machine(7)
    del document["machine"]
    with pytest.raises(CalibrationFileError, match=r"machine.drive_serial_numbers: missing"):
        read_calibration_file(_file(tmp_path, document), tolerances)
    document["schema_version"] = 1  # a file of the format before machines were named
    with pytest.raises(CalibrationFileError, match="version 1 names no machine: calibrate again"):
        read_calibration_file(_file(tmp_path, document), tolerances)


@pytest.mark.parametrize(
    ("joint", "value", "why"),
    [
        ("gantry_x", 2**32, "gantry_x: must be a whole number in"),
        ("gantry_x", 3.5, "gantry_x: must be a whole number in"),
        ("spindle", 5, "no drive 'spindle'"),
    ],
)
def test_a_serial_number_that_is_not_one_is_refused_naming_it(tmp_path, joint, value, why):
    document = calibration_document(GeometricErrors.zero(), "campaign test", simulated_machine(None))
    document["machine"]["drive_serial_numbers"][joint] = {"value": value, "unit": "1", "source": "test"}
    with pytest.raises(CalibrationFileError, match=why):
        read_calibration_file(_file(tmp_path, document), robot_parameters().geometric)
