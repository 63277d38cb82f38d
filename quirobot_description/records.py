"""`frozen_record`: a frozen dataclass whose construction costs a quarter of the stock one's.

A frozen dataclass's generated __init__ stores each field through object.__setattr__ (its own
__setattr__ refuses), about 0.25 us a field here. The records the control loop builds at every
1 kHz cycle (each drive's feedback, the joint state, the stack's status) cost microseconds each
that way. `frozen_record` keeps everything the dataclass gives (fields, repr, equality, hash,
`dataclasses.replace`, FrozenInstanceError on assignment) and replaces only __init__ with one,
generated from the same fields and defaults, that writes the instance's dict directly.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar

T = TypeVar("T")


def frozen_record(cls: type[T]) -> type[T]:
    """`@dataclass(frozen=True)` with the fast __init__ (module doc). Plain fields only: a default
    factory, a keyword-only or non-init field, or a __post_init__ is a TypeError naming it (the
    stock __init__ would run them)."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"frozen_record {cls.__name__}: a __post_init__ needs the dataclass's own __init__")
    parameters, defaults = [], {}
    for field in dataclasses.fields(cls):
        if field.default_factory is not dataclasses.MISSING or not field.init or field.kw_only:
            raise TypeError(
                f"frozen_record {cls.__name__}: field {field.name} has a default factory, is keyword-only "
                "or is not in __init__: use @dataclass(frozen=True)"
            )
        if field.default is dataclasses.MISSING:
            parameters.append(field.name)
        else:
            defaults[f"_default_{field.name}"] = field.default
            parameters.append(f"{field.name}=_default_{field.name}")
    stores = "".join(f"    values[{field.name!r}] = {field.name}\n" for field in dataclasses.fields(cls))
    source = f"def __init__(self, {', '.join(parameters)}):\n    values = self.__dict__\n{stores}"
    namespace: dict = {}
    exec(source, defaults, namespace)  # noqa: S102 - generated from the class's own field names
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    cls.__init__ = init
    return cls
