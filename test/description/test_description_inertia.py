"""Inertia helpers against hand values and pinocchio's own solids (independent formulas)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given
from hypothesis import strategies as st

from quirobot_description.inertia import (
    box_inertia,
    cylinder_inertia,
    cylinder_mass,
    inertia_problems,
    sphere_inertia,
)

pytestmark = pytest.mark.engines


def test_one_kilogram_box_hand_values():
    # issue 2 "Done when": 1 kg box 0.2 x 0.1 x 0.1 m -> Ixx = 0.0016667, Iyy = Izz = 0.0041667 kg*m^2
    inertia = box_inertia(1.0, [0.2, 0.1, 0.1])
    assert inertia[0, 0] == pytest.approx(0.0016667, abs=5e-8)
    assert inertia[1, 1] == pytest.approx(0.0041667, abs=5e-8)
    assert inertia[2, 2] == pytest.approx(0.0041667, abs=5e-8)
    assert np.count_nonzero(inertia - np.diag(np.diag(inertia))) == 0


positive = st.floats(min_value=0.01, max_value=10.0)


@given(positive, positive, positive, positive)
def test_box_matches_pinocchio(mass, x, y, z):
    assert np.allclose(box_inertia(mass, [x, y, z]), pin.Inertia.FromBox(mass, x, y, z).inertia, rtol=1e-12)


@given(positive, positive, positive)
def test_cylinder_matches_pinocchio_along_each_axis(mass, radius, length):
    reference = pin.Inertia.FromCylinder(mass, radius, length).inertia  # axis z
    assert np.allclose(cylinder_inertia(mass, radius, length, "z"), reference, rtol=1e-12)
    # about x: the z-axis cylinder turned by 90 deg about y
    turn = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])  # exact Ry(pi/2)
    assert np.allclose(cylinder_inertia(mass, radius, length, "x"), turn @ reference @ turn.T, rtol=1e-12)


@given(positive, positive)
def test_sphere_matches_pinocchio(mass, radius):
    assert np.allclose(sphere_inertia(mass, radius), pin.Inertia.FromSphere(mass, radius).inertia, rtol=1e-12)


def test_cylinder_mass_is_density_times_volume():
    assert cylinder_mass(7850.0, 0.01, 0.1) == pytest.approx(7850.0 * np.pi * 1e-4 * 0.1, rel=1e-15)


def test_report_link_inertias():
    # report ch.5: solid cylinder about its centre, Ixx = Iyy = m(3r^2 + l^2)/12, Izz = m r^2 / 2
    link4 = cylinder_inertia(4.0, 0.06, 0.4, "z")
    assert link4[0, 0] == pytest.approx(4.0 * (3 * 0.06**2 + 0.4**2) / 12)
    assert link4[2, 2] == pytest.approx(4.0 * 0.06**2 / 2)


def test_effective_joint5_inertia_of_the_reports_lumped_link():
    # report ch.5: with the report's lumped m5 = 7 kg (r5 = 0.04 m, l5 = 0.2 m, centre of mass at
    # mid-link) correct rigid-body physics gives an effective joint-5 inertia of about 0.0961
    # kg*m^2 (the report's code, counting the parallel-axis term twice, got 0.16893).
    mass, radius, length = 7.0, 0.04, 0.2
    about_centre = cylinder_inertia(mass, radius, length, "x")
    about_joint = about_centre[1, 1] + mass * (length / 2) ** 2  # pitch axis is the link's y
    assert about_joint == pytest.approx(0.0961, abs=5e-5)


def test_inertia_problems_accepts_physical_and_names_unphysical():
    assert inertia_problems(box_inertia(2.0, [0.3, 0.2, 0.1])) == []
    assert "positive-definite" in inertia_problems(np.diag([1.0, 1.0, -1.0]))[0]
    assert "triangle" in inertia_problems(np.diag([0.1, 0.1, 1.0]))[0]
    assert "symmetric" in inertia_problems(np.array([[1.0, 0.1, 0], [0, 1.0, 0], [0, 0, 1.0]]))[0]


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_input_names_the_problem(bad):
    with pytest.raises(ValueError, match="mass"):
        box_inertia(bad, [0.1, 0.1, 0.1])
    with pytest.raises(ValueError, match="radius"):
        cylinder_inertia(1.0, bad, 0.1)
