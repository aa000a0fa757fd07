"""Every tabular answer becomes one Arrow table with a fixed schema, then pandas, polars or Arrow.

One schema per dataset and one conversion path, so a JSON cursor walk, a Parquet, a CSV and a JSONL
export of the same ticks give identical frames (values, dtypes, order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

Output = Literal["pandas", "polars", "arrow"]
TickFormat = Literal["csv", "jsonl", "parquet"]

UTC_MS = pa.timestamp("ms", tz="UTC")
UTC_US = pa.timestamp("us", tz="UTC")

# /v1/ticks members, in the contract's order; `t` becomes a UTC timestamp.
TICK_SCHEMA = pa.schema(
    [
        pa.field("t", UTC_MS, nullable=False),
        pa.field("event", pa.string(), nullable=False),
        pa.field("side", pa.string(), nullable=False),
        pa.field("best_bid", pa.float64(), nullable=False),
        pa.field("best_ask", pa.float64(), nullable=False),
        pa.field("price", pa.float64(), nullable=False),
        pa.field("size", pa.float64(), nullable=False),
    ]
)
# The CSV export names two columns differently (docs/API.md §4, /v1/ticks/export).
_TICK_CSV_NAMES = {"timestamp": "t", "event_type": "event"}

# The opt-in tick columns (`fields`, docs/API.md §4), in the order the service appends them; local_t
# arrives as Unix ms with up to 3 decimals and becomes a UTC timestamp in µs.
TICK_FIELDS = ("book_side", "taker_side", "local_t", "seq")
_FIELD_TYPES = {"book_side": pa.string(), "taker_side": pa.string(), "local_t": UTC_US, "seq": pa.uint64()}
# How each opt-in column reads from CSV and JSON text before conform() types it.
_FIELD_TEXT_TYPES = {"book_side": pa.string(), "taker_side": pa.string(), "local_t": pa.float64(), "seq": pa.uint64()}


def tick_fields(fields: str | Sequence[str] | None) -> list[str]:
    """The opt-in columns ``fields`` names (``"all"``, ``"book_side,seq"`` or a list), in the service's order."""
    if fields is None:
        return []
    names = list(TICK_FIELDS) if fields == "all" else (fields.split(",") if isinstance(fields, str) else list(fields))
    unknown = [n for n in names if n not in TICK_FIELDS]
    if unknown or not names:
        raise ValueError(f'fields must name some of {", ".join(TICK_FIELDS)}, or be "all"; got {fields!r}')
    return [f for f in TICK_FIELDS if f in names]


def tick_schema(fields: Sequence[str] = ()) -> pa.Schema:
    """TICK_SCHEMA with the opt-in columns appended."""
    return pa.schema(list(TICK_SCHEMA) + [pa.field(f, _FIELD_TYPES[f], nullable=False) for f in fields])


CANDLE_SCHEMA = pa.schema(
    [
        pa.field("timestamp", UTC_MS, nullable=False),
        pa.field("open", pa.float64(), nullable=False),
        pa.field("high", pa.float64(), nullable=False),
        pa.field("low", pa.float64(), nullable=False),
        pa.field("close", pa.float64(), nullable=False),
        pa.field("volume", pa.int64(), nullable=False),
    ]
)


def book_schema(depth: int) -> pa.Schema:
    """docs/TIME-MACHINE.md §3: timestamp, best_bid, best_ask, then bid and ask levels best first (nullable)."""
    fields = [pa.field("timestamp", UTC_MS, nullable=False), pa.field("best_bid", pa.float64()), pa.field("best_ask", pa.float64())]
    for side in ("bid", "ask"):
        for i in range(depth):
            fields += [pa.field(f"{side}_price_{i}", pa.float64()), pa.field(f"{side}_size_{i}", pa.float64())]
    return pa.schema(fields)


def convert(table: pa.Table, as_: Output) -> Any:
    if as_ == "arrow":
        return table
    if as_ == "pandas":
        return table.to_pandas()
    if as_ == "polars":
        import polars as pl

        return pl.from_arrow(table)
    raise ValueError(f'as_ must be "pandas", "polars" or "arrow"; got {as_!r}')


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """The columns of ``schema``, in its order, cast to its types (int64 ms → UTC timestamp)."""
    columns = []
    for field in schema:
        column = table.column(field.name)
        if field.type == UTC_MS and not pa.types.is_timestamp(column.type):
            column = column.cast(pa.int64()).cast(UTC_MS)
        elif field.type == UTC_US and not pa.types.is_timestamp(column.type):
            # ms with 3 decimals → whole µs (rounded: 1766481546487.123 × 1000 is not exactly an integer in float64).
            column = pc.round(pc.multiply(column.cast(pa.float64()), 1000)).cast(pa.int64()).cast(UTC_US)
        columns.append(column.cast(field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def ticks_from_rows(rows: Sequence[dict[str, Any]], schema: pa.Schema = TICK_SCHEMA) -> pa.Table:
    """JSON rows of /v1/ticks (``t`` in ms) → tick table (``schema``: tick_schema of the fields asked for)."""
    raw = {name: [row[name] for row in rows] for name in schema.names}
    text = pa.table({f.name: pa.array(raw[f.name], _FIELD_TEXT_TYPES.get(f.name, pa.int64() if f.name == "t" else f.type)) for f in schema})
    return conform(text, schema)


def read_ticks(body: bytes, format: TickFormat, schema: pa.Schema = TICK_SCHEMA) -> pa.Table:
    """A /v1/ticks/export body in ``format`` → tick table (``schema``: tick_schema of the fields asked for)."""
    src = pa.BufferReader(body)
    extra = {f.name: _FIELD_TEXT_TYPES[f.name] for f in list(schema)[len(TICK_SCHEMA) :]}
    if format == "parquet":
        return conform(pq.read_table(src), schema)
    if format == "csv":
        types = {"timestamp": pa.int64(), "event_type": pa.string(), "side": pa.string()}
        types.update({f.name: f.type for f in list(TICK_SCHEMA)[3:]})
        types.update(extra)
        table = pacsv.read_csv(src, convert_options=pacsv.ConvertOptions(column_types=types, strings_can_be_null=False))
        return conform(table.rename_columns([_TICK_CSV_NAMES.get(n, n) for n in table.column_names]), schema)
    if format == "jsonl":
        if not body.strip():  # no ticks: no lines, which Arrow's JSON reader refuses
            return schema.empty_table()
        text = pa.schema([pa.field("t", pa.int64())] + list(TICK_SCHEMA)[1:] + [pa.field(n, t) for n, t in extra.items()])
        table = pajson.read_json(src, parse_options=pajson.ParseOptions(explicit_schema=text, unexpected_field_behavior="error"))
        return conform(table, schema)
    raise ValueError(f'format must be "csv", "jsonl" or "parquet"; got {format!r}')
