"""Every tabular answer becomes one Arrow table with a fixed schema, then pandas, polars or Arrow.

One schema per dataset and one conversion path, so a JSON cursor walk, a Parquet, a CSV and a JSONL
export of the same ticks give identical frames (values, dtypes, order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, Union, cast, overload

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

if TYPE_CHECKING:
    import polars as pl

Output = Literal["pandas", "polars", "arrow"]
TickFormat = Literal["csv", "jsonl", "parquet"]
# What a tabular method returns, by its ``as_``.
Frame = Union[pd.DataFrame, "pl.DataFrame", pa.Table]

UTC_MS = pa.timestamp("ms", tz="UTC")

# /v1/ticks members, in the contract's order; `t` becomes a UTC timestamp.
_TICK_FIELDS: list[pa.Field[Any]] = [
    pa.field("t", UTC_MS, nullable=False),
    pa.field("event", pa.string(), nullable=False),
    pa.field("side", pa.string(), nullable=False),
    pa.field("best_bid", pa.float64(), nullable=False),
    pa.field("best_ask", pa.float64(), nullable=False),
    pa.field("price", pa.float64(), nullable=False),
    pa.field("size", pa.float64(), nullable=False),
]
TICK_SCHEMA = pa.schema(_TICK_FIELDS)
# The CSV export names two columns differently (docs/API.md §4, /v1/ticks/export).
_TICK_CSV_NAMES = {"timestamp": "t", "event_type": "event"}

_CANDLE_FIELDS: list[pa.Field[Any]] = [
    pa.field("timestamp", UTC_MS, nullable=False),
    pa.field("open", pa.float64(), nullable=False),
    pa.field("high", pa.float64(), nullable=False),
    pa.field("low", pa.float64(), nullable=False),
    pa.field("close", pa.float64(), nullable=False),
    pa.field("volume", pa.int64(), nullable=False),
]
CANDLE_SCHEMA = pa.schema(_CANDLE_FIELDS)


def book_schema(depth: int) -> pa.Schema:
    """docs/TIME-MACHINE.md §3: timestamp, best_bid, best_ask, then bid and ask levels best first (nullable)."""
    fields: list[pa.Field[Any]] = [pa.field("timestamp", UTC_MS, nullable=False), pa.field("best_bid", pa.float64()), pa.field("best_ask", pa.float64())]
    for side in ("bid", "ask"):
        for i in range(depth):
            fields += [pa.field(f"{side}_price_{i}", pa.float64()), pa.field(f"{side}_size_{i}", pa.float64())]
    return pa.schema(fields)


@overload
def convert(table: pa.Table, as_: Literal["pandas"]) -> pd.DataFrame: ...
@overload
def convert(table: pa.Table, as_: Literal["polars"]) -> pl.DataFrame: ...
@overload
def convert(table: pa.Table, as_: Literal["arrow"]) -> pa.Table: ...
@overload
def convert(table: pa.Table, as_: Output) -> Frame: ...
def convert(table: pa.Table, as_: Output) -> Frame:
    """``table`` as a pandas DataFrame, a polars DataFrame or itself (``as_="arrow"``)."""
    if as_ == "arrow":
        return table
    if as_ == "pandas":
        return table.to_pandas()
    if as_ == "polars":
        try:
            import polars as pl
        except ImportError:
            raise ImportError("as_=\"polars\" needs polars, an optional dependency: pip install 'tickhouse[polars]' (or pip install polars)") from None
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)  # a Table, not a chunked array, gives a DataFrame
        return frame
    raise ValueError(f'as_ must be "pandas", "polars" or "arrow"; got {as_!r}')


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """The columns of ``schema``, in its order, cast to its types (int64 ms → UTC timestamp)."""
    columns = []
    for field in schema:
        column = table.column(field.name)
        if field.type == UTC_MS and not pa.types.is_timestamp(column.type):
            column = column.cast(pa.int64()).cast(UTC_MS)
        columns.append(column.cast(field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def ticks_from_rows(rows: Sequence[dict[str, Any]]) -> pa.Table:
    """JSON rows of /v1/ticks (``t`` in ms) → tick table."""
    raw = {name: [row[name] for row in rows] for name in TICK_SCHEMA.names}
    arrays = [pa.array(raw["t"], pa.int64()).cast(UTC_MS)] + [pa.array(raw[f.name], f.type) for f in list(TICK_SCHEMA)[1:]]
    return pa.Table.from_arrays(arrays, schema=TICK_SCHEMA)


def read_ticks(body: bytes, format: TickFormat) -> pa.Table:
    """A /v1/ticks/export body in ``format`` → tick table."""
    src = pa.BufferReader(body)
    if format == "parquet":
        return conform(pq.read_table(src), TICK_SCHEMA)
    if format == "csv":
        types = {"timestamp": pa.int64(), "event_type": pa.string(), "side": pa.string()}
        types.update({f.name: f.type for f in list(TICK_SCHEMA)[3:]})
        # pyarrow-stubs lists no NativeFile among read_csv's sources; pyarrow reads one without a copy.
        table = pacsv.read_csv(cast(Any, src), convert_options=pacsv.ConvertOptions(column_types=types, strings_can_be_null=False))
        return conform(table.rename_columns([_TICK_CSV_NAMES.get(n, n) for n in table.column_names]), TICK_SCHEMA)
    if format == "jsonl":
        if not body.strip():  # no ticks: no lines, which Arrow's JSON reader refuses
            return TICK_SCHEMA.empty_table()
        schema = pa.schema([pa.field("t", pa.int64())] + list(TICK_SCHEMA)[1:])
        table = pajson.read_json(cast(Any, src), parse_options=pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error"))
        return conform(table, TICK_SCHEMA)
    raise ValueError(f'format must be "csv", "jsonl" or "parquet"; got {format!r}')


def candles_from_rows(rows: Sequence[dict[str, Any]]) -> pa.Table:
    """JSON rows of /v1/ohlcv (``timestamp`` in ms) → candle table."""
    fields = list(CANDLE_SCHEMA)
    arrays = [pa.array([r["timestamp"] for r in rows], pa.int64()).cast(UTC_MS)] + [pa.array([r[f.name] for r in rows], f.type) for f in fields[1:]]
    return pa.Table.from_arrays(arrays, schema=CANDLE_SCHEMA)
