"""frozen_record (quirobot_description.records): its generated __init__ takes the fields of the
dataclass in order with their defaults and stores every one; the record stays a frozen dataclass
(equality, replace, no assignment); what it cannot do the stock way is refused by name. The
control loop's records are checked field for field."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from quirobot_control.bridge.drive_bridge import JointStateSample
from quirobot_control.drives.interface import DriveFeedback, DriveMode, DriveState
from quirobot_control.procedures.drill_hole_port import Measurement, StackStatus
from quirobot_description.records import frozen_record


@pytest.mark.parametrize("record", [DriveFeedback, JointStateSample, Measurement, StackStatus])
def test_the_init_takes_the_fields_in_order_with_their_defaults(record):
    parameters = list(inspect.signature(record.__init__).parameters.values())[1:]
    fields = dataclasses.fields(record)
    assert [p.name for p in parameters] == [f.name for f in fields]
    assert [p.default for p in parameters] == [
        inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default for f in fields
    ]
    assert record.__dataclass_params__.frozen


def test_every_field_is_stored_and_the_record_stays_frozen():
    values = dict(
        position=0.25,
        velocity=-0.5,
        current=1.5,
        effort=-3.0,
        state=DriveState.QUICK_STOP,
        fault="overspeed",
        homed=False,
        mode=DriveMode.CSP,
        halted=True,
        stopping=True,
        confirmed=False,
    )
    feedback = DriveFeedback(**values)
    assert dataclasses.asdict(feedback) == values
    assert DriveFeedback(*values.values()) == feedback
    assert hash(DriveFeedback(*values.values())) == hash(feedback)
    assert dataclasses.replace(feedback, position=0.5).position == 0.5
    assert dataclasses.replace(feedback, position=0.5) != feedback
    with pytest.raises(dataclasses.FrozenInstanceError):
        feedback.position = 1.0
    short = DriveFeedback(0.0, 0.0, 0.0, 0.0, DriveState.ENABLED, None)
    assert (short.homed, short.mode, short.halted, short.stopping, short.confirmed) == (
        True,
        DriveMode.CST,
        False,
        False,
        True,
    )
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'fault'"):
        DriveFeedback(0.0, 0.0, 0.0, 0.0, DriveState.ENABLED)
    with pytest.raises(TypeError, match="unexpected keyword argument 'speed'"):
        DriveFeedback(0.0, 0.0, 0.0, 0.0, DriveState.ENABLED, None, speed=1.0)


def test_what_needs_the_stock_init_is_refused_by_name():
    with pytest.raises(TypeError, match="field samples has a default factory"):

        @frozen_record
        class WithFactory:
            samples: list = dataclasses.field(default_factory=list)

    with pytest.raises(TypeError, match="__post_init__"):

        @frozen_record
        class WithPostInit:
            value: float

            def __post_init__(self) -> None:
                pass
