"""The packages' default-argument conveniences: the shipped parameter file unless another is given."""

from __future__ import annotations

import os

import numpy as np
import pytest

import quirobot_control
import quirobot_description
import quirobot_kinematics
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.models.dynamics import Dynamics
from quirobot_control.planning.tasks import load_task, plan_line_task
from quirobot_description import robot_parameters
from quirobot_description.parameters import DEFAULT_PARAMETER_FILE, load_parameters
from quirobot_kinematics import ApproachTarget, IKError, fk, ik, jacobian, kinematic_model
from quirobot_kinematics.forward import forward_kinematics
from quirobot_kinematics.jacobian import geometric_jacobian
from quirobot_kinematics.model import KinematicModel

Q = np.array([0.6, 1.1, 0.4, 0.7, -0.3])


@pytest.mark.parametrize("package", [quirobot_description, quirobot_kinematics, quirobot_control])
def test_every_name_in_all_is_defined(package):
    assert package.__all__ and all(hasattr(package, name) for name in package.__all__)


def test_the_kinematics_conveniences_use_the_shipped_model(parameters):
    model = KinematicModel.from_parameters(parameters)
    np.testing.assert_array_equal(fk(Q, feed=0.03), forward_kinematics(Q, model, 0.03))
    np.testing.assert_array_equal(jacobian(Q, 0.03), geometric_jacobian(Q, model, 0.03))
    T = fk(Q)
    np.testing.assert_allclose(ik(T, seed=Q), Q, atol=1e-12)
    q = ik(ApproachTarget(T[:3, 3], T[:3, 2]), seed=Q)
    np.testing.assert_allclose(fk(q)[:3, 3], T[:3, 3], atol=1e-12)


def _parameter_file_with_gantry_x_travel(folder, upper: float):
    """A copy of the shipped parameter file whose gantry_x ends at `upper` m instead of 2 m."""
    line = 'upper: {value: 2.0, unit: m, source: "report joint limits: 0 <= d1 <= 2 m (guide length)"}'
    text = DEFAULT_PARAMETER_FILE.read_text()
    assert text.count(line) == 1
    path = folder / "quirobot.yaml"
    path.write_text(text.replace(line, line.replace("2.0", str(upper), 1)))
    return path


def test_another_parameter_file_is_honoured_and_reread_when_edited(tmp_path):
    path = _parameter_file_with_gantry_x_travel(tmp_path, 1.5)
    assert robot_parameters(path).upper_limits[0] == 1.5 and robot_parameters().upper_limits[0] == 2.0
    target = ApproachTarget([1.8, 1.0, -1.0], [0.0, 0.0, -1.0])
    assert ik(target)[0] == pytest.approx(1.8)  # pointing down: tool0 right under the wrist
    with pytest.raises(IKError, match="gantry_x would be 1.8 m, 0.3 m above its upper limit 1.5 m"):
        ik(target, model=kinematic_model(path))
    _parameter_file_with_gantry_x_travel(tmp_path, 1.2)
    os.utime(path, ns=(1, 1))  # a different version, whatever the clock's resolution
    assert robot_parameters(path).upper_limits[0] == 1.2
    assert robot_parameters(path) is robot_parameters(path)  # read once per version


def test_inverse_dynamics_is_the_rnea_of_the_shipped_bodies(parameters):
    rng = np.random.default_rng(3)
    q, qd, qdd = (rng.uniform(-1, 1, (20, 5)) for _ in range(3))
    expected = Dynamics(parameters).inverse_dynamics(q, qd, qdd, friction=True)
    np.testing.assert_array_equal(quirobot_control.inverse_dynamics(q, qd, qdd), expected)
    other = load_parameters()
    np.testing.assert_array_equal(quirobot_control.inverse_dynamics(q, qd, qdd, params=other), expected)


def test_plan_is_the_tasks_plan_at_the_control_rate(parameters):
    task = load_task("line")
    expected = plan_line_task(task, parameters, control_configuration(parameters).dt)
    trajectory = quirobot_control.plan("line")
    np.testing.assert_array_equal(trajectory.positions, expected.positions)
    assert [p.name for p in trajectory.phases] == ["start", "line", "end"]
    with pytest.raises(ValueError, match="unknown task 'knee'"):
        quirobot_control.plan("knee")
