"""The run's figure, read as an engineer reads it: the whole run, its phases named, the plan
visible under the measurement, µm and µrad apart, no legend over a curve, each metric's window
marked. Checked on the figure's matplotlib objects of a real closed-loop run."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from quirobot_control.procedures.procedure import procedure_for  # noqa: E402
from quirobot_control.reporting.plots import plot_result, result_figure  # noqa: E402
from quirobot_control.simulation.incision import run_task  # noqa: E402


@pytest.fixture(scope="module", params=["incision", "line"])
def run(request, parameters):
    """(result, figure) of a real run; the incision drills 3 mm to keep the test short."""
    options = {"depth": 0.003} if request.param == "incision" else {}
    result = run_task(request.param, parameters, **options)
    figure = result_figure(result, procedure_for(request.param).panels)
    figure.canvas.draw()
    yield result, figure
    plt.close(figure)


def _axes(figure):
    return [ax for ax in figure.axes if ax.get_ylabel()]  # the panels, not the phase-name axis


def _window_span(ax, label: str) -> tuple[float, float]:
    patch = next(p for p in ax.patches if p.get_label() == label)
    x = patch.get_path().transformed(patch.get_patch_transform()).vertices[:, 0]
    return float(x.min()), float(x.max())


def test_every_panel_shows_the_whole_run_with_its_phases_named(run):
    result, figure = run
    end = float(result.log.time[-1])
    for ax in _axes(figure):
        assert ax.get_xlim() == pytest.approx((0.0, end)), ax.get_title()
    on_top = [child for ax in figure.axes for child in ax.child_axes]  # secondary x axes
    names = [label.get_text() for ax in on_top for label in ax.get_xticklabels() if label.get_text()]
    phases = [phase.name for phase in result.trajectory.phases]
    assert [name for name in names if name in phases] == phases
    if result.task.path.stem == "incision":
        assert {"retract", "withdraw", "park"} <= set(phases)


def test_lengths_and_angles_are_on_separate_axes(run):
    _, figure = run
    units = [ax.get_ylabel() for ax in _axes(figure)]
    assert "error (µm)" in units and "error (µrad)" in units
    assert not any("µm" in unit and "µrad" in unit for unit in units)
    wrist = next(ax for ax in _axes(figure) if ax.get_ylabel() == "error (µrad)")
    labels = {artist.get_label() for artist in wrist.get_children()}
    assert {"wrist_yaw", "wrist_pitch"} <= labels and "gantry_x" not in labels


def test_no_legend_lies_over_a_panel(run):
    _, figure = run
    renderer = figure.canvas.get_renderer()
    panels = [ax.get_window_extent(renderer) for ax in _axes(figure)]
    for ax in _axes(figure):
        legend = ax.get_legend().get_window_extent(renderer)
        for panel in panels:
            assert not legend.overlaps(panel), ax.get_title()


def test_the_plan_is_drawn_under_the_measurement_and_wider(run):
    _, figure = run
    panels_with_a_plan = 0
    for ax in _axes(figure):
        lines = ax.get_lines()
        planned = [i for i, line in enumerate(lines) if line.get_label().startswith("planned")]
        actual = [i for i, line in enumerate(lines) if line.get_label().startswith("actual")]
        actual += [i for i, line in enumerate(lines) if line.get_label() == "distance from the drilling axis"]
        if not planned:
            continue
        panels_with_a_plan += 1
        plan, measured = lines[planned[0]], lines[actual[0]]
        assert planned[0] < actual[0] and plan.get_zorder() <= measured.get_zorder()
        assert plan.get_linewidth() >= 4 * measured.get_linewidth()
        assert np.isfinite(plan.get_ydata()).any()
    assert panels_with_a_plan == 2


def test_each_metric_window_is_marked(run):
    result, figure = run
    if result.task.path.stem == "incision":
        label = "lateral metric window (feed + dwell)"
        start, end = result.trajectory.phase("feed").start_time, result.trajectory.phase("dwell").end_time
    else:
        label = "metric window (the line phase)"
        start, end = result.trajectory.phase("line").start_time, result.trajectory.phase("line").end_time
    spans = [_window_span(ax, label) for ax in _axes(figure) if label in [p.get_label() for p in ax.patches]]
    assert spans == [pytest.approx((start, end))]


def test_plot_result_writes_a_png(run, tmp_path):
    result, _ = run
    path = plot_result(result, tmp_path / "run.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_unknown_panel_is_refused_by_name(run):
    result, _ = run
    with pytest.raises(ValueError, match="unknown plot panel 'bone_map': give one of depth, "):
        result_figure(result, ("bone_map",))
