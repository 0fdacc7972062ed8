"""Numbers read from text gitsleep did not write (model replies, documents), safely.

Python refuses to turn a decimal string of more than 4,300 digits into an int (a guard
against quadratic-time conversion) with a ValueError that JSON and regex callers do not
expect. Such a number in a reply or a document is nonsense, never a reason to crash:
these helpers read it as infinity instead.
"""

from __future__ import annotations

import json
import math
from typing import Any


def whole_number(digits: str) -> int | float:
    """A run of decimal digits as an int; `math.inf` when it is too long to convert."""
    try:
        return int(digits)
    except ValueError:
        return math.inf


def _json_int(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)  # no digit limit for floats: -inf or inf, with its sign


def loads_json(text: str | bytes, **options: Any) -> Any:
    """`json.loads`, except that an integer too long for Python reads as a float (inf)."""
    return json.loads(text, parse_int=_json_int, **options)
