"""Times in, times out. The API speaks Unix milliseconds (UTC); the client accepts more.

Accepted: ``int`` milliseconds, ``datetime.datetime``, ``pandas.Timestamp``, ``numpy.datetime64`` or
ISO 8601 text. A time without a zone (naive datetime, text without offset) is taken as UTC.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Union

import numpy as np
import pandas as pd

#: What the client accepts as a time (``pandas.Timestamp`` is a ``datetime``).
TimeLike = Union[int, datetime, pd.Timestamp, "np.datetime64[Any]", str]


def to_ms(value: TimeLike, name: str = "time") -> int:
    """Unix milliseconds (UTC) of a time.

    Parameters
    ----------
    value : int, datetime, pandas.Timestamp, numpy.datetime64 or str
        An int is taken as milliseconds already; a value without a zone (naive datetime, ISO text
        without offset) is UTC. Sub-millisecond parts are truncated.
    name : str, default "time"
        The parameter's name, for error messages.

    Returns
    -------
    int
    """
    if isinstance(value, bool):
        raise TypeError(f"{name}: a bool is not a time")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        # datetime.fromisoformat accepts "Z" only from Python 3.11 on.
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"{name}: {value!r} is not ISO 8601 text (e.g. 2026-11-24T08:00:00Z)") from None
    if isinstance(value, pd.Timestamp):
        ts = value.tz_localize("UTC") if value.tzinfo is None else value
        return int(ts.value // 1_000_000)
    if isinstance(value, datetime):
        dt = value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value
        delta = dt - datetime(1970, 1, 1, tzinfo=timezone.utc)
        return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
    if isinstance(value, np.datetime64):
        return int(value.astype("datetime64[ms]").astype("int64"))
    raise TypeError(f"{name}: expected int milliseconds, datetime, pandas.Timestamp or ISO text; got {type(value).__name__}")
