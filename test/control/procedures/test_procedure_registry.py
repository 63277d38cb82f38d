"""Procedures are plug-ins: a procedure defined here, in the test only, runs through the registry
without a line of the core knowing it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from quirobot_control.procedures.procedure import (
    ProcedureError,
    SummaryRow,
    procedure_for,
    procedure_names,
    register,
    task_kind,
)


@dataclass(frozen=True)
class _Metrics:
    counted: int

    def as_dict(self) -> dict:
        return {"counted": self.counted}


@dataclass(frozen=True)
class _Result:
    task: dict
    metrics: _Metrics
    log: None = None
    trajectory: None = None
    unsafe: list = field(default_factory=list)


@dataclass(frozen=True)
class CountingProcedure:
    """Counts to the number its task file names (no arm motion)."""

    name: str = "counting"
    tool: str = "none"
    phases: tuple[str, ...] = ("count",)
    options: frozenset[str] = frozenset()
    summary_rows: tuple[SummaryRow, ...] = (SummaryRow("counted", "counted", 1.0, ""),)
    targets: dict = field(default_factory=lambda: {"counted": 3.0})
    panels: tuple[str, ...] = ()

    def load(self, path: Path) -> dict:
        return {"up_to": int(Path(path).read_text().split("up_to:")[1].split()[0]), "path": Path(path)}

    def plan(self, task, params, dt):
        return None

    def fixtures(self, task, params):
        return None

    def simulate(self, task, params, **options):
        return _Result(task, _Metrics(sum(1 for _ in range(task["up_to"]))))

    def document(self, result, base):
        return {"counting": {"up_to": result.task["up_to"]}, **base}


def test_a_procedure_defined_in_a_test_runs_through_the_registry(tmp_path):
    from quirobot_control.simulation.incision import targets_met

    register(CountingProcedure())
    file = tmp_path / "count.yaml"
    file.write_text("schema_version: 1\ntask: counting\nup_to: 5\n")
    kind, path = task_kind(file)
    procedure = procedure_for(kind)
    result = procedure.simulate(procedure.load(path), params=None)
    assert kind == "counting" and "counting" in procedure_names()
    assert result.metrics.as_dict()["counted"] == 5  # computed by the procedure from its file
    assert targets_met(result.metrics, procedure.targets) == {"counted": False}  # 5 > 3
    document = procedure.document(result, {"metrics": result.metrics.as_dict()})
    assert list(document) == ["counting", "metrics"]


def test_shipped_procedures_and_refusals():
    assert procedure_for("incision").tool == "drill"
    assert procedure_for("arthroscopy").tool == "arthroscope"
    assert "feed" in procedure_for("incision").phases
    # Every shipped procedure names only panels the figure knows.
    from quirobot_control.reporting.plots import PANELS

    assert all(set(procedure_for(name).panels) <= set(PANELS) for name in procedure_names())
    with pytest.raises(ProcedureError, match="unknown task 'knee'"):
        procedure_for("knee")

    class Broken:
        name = "broken"

    with pytest.raises(ProcedureError, match="Broken is not a procedure: it has no tool"):
        register(Broken())
