"""config/control.yaml: the gains are the pole placement on the motor + load model it states.

References: MuJoCo's mass matrix (mj_fullM) of the exported URDF for the link-side inertia, the
drive model's reflected rotor inertia, the design formula's closed-loop polynomial (s + w)^2 (s + beta w).
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from quirobot_control.axes.limits import JointLimits
from quirobot_control.drive_simulators.simulated_drive import drive_for_joint
from quirobot_control.hardware.control_config import (
    ControlConfigError,
    design_gains,
    load_control_config,
)
from quirobot_description.parameters import axes_for

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

pytestmark = pytest.mark.engines


@pytest.fixture(scope="module")
def largest_link_inertia(exported_urdf, parameters):
    """Largest diagonal of MuJoCo's joint-space mass matrix over random in-limit configurations."""
    model = mujoco.MjModel.from_xml_path(str(exported_urdf))
    data = mujoco.MjData(model)
    limits = JointLimits.from_parameters(parameters)
    rng = np.random.default_rng(5)
    largest = np.zeros(model.nv)
    matrix = np.zeros((model.nv, model.nv))
    for _ in range(400):
        data.qpos[:] = rng.uniform(limits.lower, limits.upper)
        mujoco.mj_forward(model, data)
        mujoco.mj_fullM(model, data, matrix)
        largest = np.maximum(largest, np.diag(matrix))
    return dict(zip(DRILL_AXES, largest, strict=True))


@pytest.mark.parametrize("joint", DRILL_AXES)
def test_effective_inertia_is_reflected_rotor_plus_largest_link_inertia(
    parameters, control, largest_link_inertia, joint
):
    drive = drive_for_joint(parameters, joint)
    expected = drive.reflected_inertia + largest_link_inertia[joint]
    assert control.joint(joint).effective_inertia == pytest.approx(expected, rel=5e-3)


@pytest.mark.parametrize("joint", DRILL_AXES)
def test_gains_place_the_closed_loop_poles_as_stated(parameters, control, joint):
    settings = control.joint(joint)
    drive = drive_for_joint(parameters, joint)
    current_gain = drive.motor.torque_constant * drive.transmission.ratio * drive.efficiency
    kp, ki, kd = design_gains(
        settings.effective_inertia, current_gain, control.bandwidth, control.integral_ratio
    )
    assert settings.gains.kp == pytest.approx(kp, rel=1e-5)
    assert settings.gains.ki == pytest.approx(ki, rel=1e-5)
    assert settings.gains.kd == pytest.approx(kd, rel=1e-5)
    # Closed loop M s^3 + K kd s^2 + K kp s + K ki: poles at -w, -w, -beta*w (all real, negative).
    g, M, K = settings.gains, settings.effective_inertia, current_gain
    w, beta = control.bandwidth, control.integral_ratio
    expected = np.poly([-w, -w, -beta * w])
    np.testing.assert_allclose([1.0, K * g.kd / M, K * g.kp / M, K * g.ki / M], expected, rtol=1e-5)
    assert settings.gains.output_limit == drive.motor.max_current


def test_a_malformed_control_file_is_refused_by_key(tmp_path, parameters):
    from quirobot_control.hardware.control_config import CONTROL_CONFIG_FILE
    from quirobot_description.data_files import find_data_file

    text = find_data_file(CONTROL_CONFIG_FILE).read_text()
    broken = tmp_path / "control.yaml"
    broken.write_text(text.replace("kp: {value: 182891.94,", "kp: {value: .nan,"))
    currents = {name: 1.0 for name in DRILL_AXES}
    with pytest.raises(ControlConfigError, match="joints.gantry_x.kp"):
        load_control_config(broken, max_currents=currents)
    broken.write_text(text.replace("  watchdog_timeout:", "  watchdog_timeout_typo:"))
    with pytest.raises(ControlConfigError, match="unknown key safety.watchdog_timeout_typo"):
        load_control_config(broken, max_currents=currents)


def test_control_rate_is_the_drives_control_rate(parameters, control):
    assert control.rate == parameters.drive.control_rate
