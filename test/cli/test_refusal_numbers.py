"""Numbers in refusals (issue 33 item 14): short whatever the value, and a value just past its
bound never reads as the bound; a task file's `2e-2` (YAML 1.1 reads it as a string) is a number.

Each case runs the real CLI in-process; the bounds are computed here from the parameter file.
"""

from __future__ import annotations

import re

import pytest
import yaml

from quirobot_cli.cli import main
from quirobot_control.axes.limits import JointLimits
from quirobot_control.planning.tasks import load_task, task_file
from quirobot_description.parameters import (
    DEFAULT_PARAMETER_FILE,
    DrillParameters,
    ParameterError,
    load_parameters,
)
from quirobot_description.shown_numbers import compared, shown

#: A number as a message writes it (72, 72.000001, 1e+303, 0.0015).
NUMBER = r"-?\d+(?:\.\d+)?(?:e[-+]\d+)?"


def _refusal(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    return captured.err.strip()


def _the_two_sides(message: str, verb: str) -> tuple[str, str]:
    """The numbers either side of `verb` ("exceeds") in a refusal: (value, bound)."""
    match = re.search(rf"({NUMBER}) \S+ {verb}\D*?({NUMBER})", message)
    assert match is not None, message
    return match.group(1), match.group(2)


def _feed_stroke_left() -> float:
    """m: the depth at which the incision's feed reaches its soft limit (from the parameter file)."""
    params = load_parameters()
    task = load_task("incision")
    feed = DrillParameters.feed_index
    return float(JointLimits.from_parameters(params).soft_upper[feed] - task.park[feed] - task.standoff)


def test_a_huge_depth_is_refused_with_a_short_number(capsys):
    message = _refusal(capsys, ["simulate", "--depth", "1e300"])
    assert "exceeds" in message and len(message) < 200, message
    assert max(len(token) for token in re.findall(r"\d+", message)) < 10, message


@pytest.mark.parametrize("past", [1e-9, 1e-12], ids=["1 nm past", "1 pm past"])
def test_a_depth_just_past_the_stroke_does_not_read_as_the_stroke(capsys, past):
    message = _refusal(capsys, ["simulate", "--depth", repr(_feed_stroke_left() + past)])
    value, bound = _the_two_sides(message, "exceeds")
    assert value != bound and float(value) > float(bound), message


def test_a_max_thrust_just_over_the_robots_reads_over_it(capsys):
    limit = load_parameters().drilling.safety.thrust_limit
    message = _refusal(capsys, ["simulate", "--max-thrust", repr(limit * (1.0 + 1e-9))])
    value, bound = _the_two_sides(message, "exceeds")
    assert value != bound and float(value) > float(bound), message


def test_shown_numbers_are_short_and_a_pair_differs():
    assert shown(1e300) == "1e+300" and shown(0.0015) == "0.0015"
    assert compared(72.000001, 72.0) == ("72.000001", "72")
    assert compared(25.2, 78.0) == ("25.2", "78")
    value, bound = compared(78.0 + 1.5e-14, 78.0)  # the next floats above 78
    assert value != bound and float(value) > 78.0


@pytest.mark.parametrize("written", ["2.52e-2", "2.52E-2", "252e-4", "2.52e-02", "+2.52e-2"])
def test_a_task_value_in_exponent_notation_without_a_dot_or_sign_reads_as_a_number(tmp_path, written):
    """YAML 1.1 (PyYAML) reads 2e-2 and 1e3 as strings (its float needs a dot and a signed
    exponent); the reader takes YAML 1.2's floats, whatever the spelling."""
    text = task_file("incision").read_text()
    assert "  value: 0.0252\n" in text  # the depth
    path = tmp_path / "incision.yaml"
    path.write_text(text.replace("  value: 0.0252\n", f"  value: {written}\n", 1))
    assert load_task(path).depth == pytest.approx(0.0252, rel=1e-15)


def test_exponent_notation_without_a_dot_everywhere_a_number_goes(tmp_path):
    raw = yaml.safe_load(task_file("incision").read_text())
    text = task_file("incision").read_text().replace("  value: 0.002\n", "  value: 2e-3\n", 1)
    path = tmp_path / "incision.yaml"
    path.write_text(text)
    assert load_task(path).standoff == pytest.approx(raw["standoff"]["value"], rel=1e-15)
    path.write_text(text.replace("  value: [1.0, 1.0, -1.35]\n", "  value: [1e0, 1E0, -135e-2]\n", 1))
    assert load_task(path).entry.tolist() == [1.0, 1.0, -1.35]


def test_a_file_value_just_past_its_plausible_range_reads_past_it(tmp_path, capsys):
    """The reader's range refusal (depth: at most 0.2 m in a task file)."""
    text = task_file("incision").read_text().replace("  value: 0.0252\n", f"  value: {0.2 + 1e-12!r}\n", 1)
    path = tmp_path / "incision.yaml"
    path.write_text(text)
    message = _refusal(capsys, ["simulate", "--task", str(path)])
    match = re.search(rf"({NUMBER}) m is outside the plausible range \[{NUMBER}, ({NUMBER})\]", message)
    assert match is not None, message
    assert match.group(1) != match.group(2) and float(match.group(1)) > 0.2, message


def test_the_parameter_file_says_how_to_write_an_exponent_xacro_would_read_as_text(tmp_path, capsys):
    """xacro reads the parameter file itself with YAML 1.1: there 1e-4 is text, so the reader
    refuses it (both must see the same number) and says how to write it."""
    text = DEFAULT_PARAMETER_FILE.read_text()
    leaf = "  xy_squareness:\n    value: 0.0001\n"
    assert leaf in text
    path = tmp_path / "quirobot.yaml"
    path.write_text(text.replace(leaf, "  xy_squareness:\n    value: 1e-4\n", 1))
    with pytest.raises(ParameterError, match=r"xy_squareness: .*'1e-4'.* write 0\.0001 or .*2\.0e-2"):
        load_parameters(path)
    path.write_text(text.replace(leaf, "  xy_squareness:\n    value: 1.0e-4\n", 1))
    assert load_parameters(path).geometric.tolerance.xy_squareness == 1e-4
