"""How a refusal shows its numbers: short, and a value never reads the same as the bound it broke.

A fixed-point format prints every digit of a huge value (1e300 m at `:.1f` is 304 characters) and
rounds a value just past its bound onto it ("72.00 mm exceeds ...: 72.00 mm" for 0.072000001 m).
Both formats here are `{:.Ng}`: at most N significant digits, an exponent for the huge and the
tiny. `compared` raises N, from 4 up to 17 (where every float is exact), until the two differ.
"""

from __future__ import annotations

#: Significant digits a number starts with in a message (72.35, 0.0015, 1e+303).
DIGITS = 4
#: Significant digits that tell any two different floats apart (IEEE 754 double: 17).
EXACT_DIGITS = 17


def shown(value: float, digits: int = DIGITS) -> str:
    """`value` with at most `digits` significant digits: '72', '0.0015', '1e+303', 'nan'."""
    return f"{float(value):.{digits}g}"


def compared(value: float, bound: float, digits: int = DIGITS) -> tuple[str, str]:
    """(value, bound) with the fewest significant digits, `digits` or more, at which they differ:
    (72.000001, 72.0) -> ('72.000001', '72'); equal floats read the same."""
    for count in range(digits, EXACT_DIGITS + 1):
        pair = shown(value, count), shown(bound, count)
        if pair[0] != pair[1]:
            return pair
    return shown(value, EXACT_DIGITS), shown(bound, EXACT_DIGITS)
