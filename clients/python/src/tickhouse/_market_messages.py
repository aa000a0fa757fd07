"""One asset's market channel over a range, rebuilt from the service's own answers as Polymarket messages.

Shared by the NautilusTrader and hftbacktest writers (``nautilus.py``, ``hftbacktest.py``); needs no
third-party engine. The sources (docs/API.md §4, docs/INGEST.md §2):

- the book as it was just before ``start``: ``/v1/orderbook?timestamp=start-1`` (so nothing at ``start``
  is applied twice);
- every tick in ``[start, end]`` with ``fields=all`` from ``/v1/ticks/export`` as Parquet, streamed to a
  temporary file and read back one batch at a time (memory bounded by the export's row group, not by
  the range);
- the levels of every exchange ``book`` in the range: ``/v1/orderbook/range`` without ``interval``,
  fetched a page at a time, matched in order to the ``book`` ticks (a ``book`` tick carries only its best
  prices).

**Messages.** A stored ``price_change`` row is one item of a frame's message; the rows of one message
share the exchange time ``t`` and the receive time ``local_t`` (every row of a frame gets the frame's
stamp, INGEST.md §4) and are consecutive in ``seq``. So a message is a maximal run of consecutive
``price_change`` ticks with equal ``(t, local_t)``. Where no receive time was stored, ``local_t = t``
and two messages of one millisecond merge into one: the book after the merged message is the same.
A ``book`` and a ``last_trade_price`` are one message each.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt
import pyarrow.parquet as pq

from ._export import Progress, write_stream
from ._time import TimeLike, to_ms

if TYPE_CHECKING:
    from ._client import Client

# Levels per side /v1/orderbook and /v1/orderbook/range return at most (docs/API.md §4).
MAX_LEVELS = 100
_RANGE_PAGE = 1_000  # /v1/orderbook/range `limit` maximum
_BATCH_ROWS = 65_536  # ticks converted per read of the temporary Parquet file
_COLUMNS = ["t", "event", "price", "size", "book_side", "taker_side", "local_t", "seq"]

Level = tuple[float, float]  # (price, size)


@dataclass(frozen=True)
class Book:
    """A whole book: replaces the asset's book. ``bids`` best first (descending), ``asks`` best first."""

    t: int  # exchange time, ms
    local_t: float  # receive time, Unix ms with µs decimals
    seq: int
    bids: list[Level]
    asks: list[Level]


@dataclass(frozen=True)
class Changes:
    """One ``price_change`` message: ``(side, price, size)`` items in arrival order, ``side`` ``bid``/``ask``, size 0 removes."""

    t: int
    local_t: float
    items: list[tuple[str, float, float]]
    seqs: list[int]  # the stored arrival order of each item


@dataclass(frozen=True)
class Trade:
    t: int
    local_t: float
    seq: int
    price: float
    size: float
    taker_side: str  # "buy" | "sell" | "" (not stored)


Message = Book | Changes | Trade


@dataclass(frozen=True)
class Source:
    """The ticks of one asset in ``[start, end]`` on disk, with what the writers need to know up front."""

    asset_id: str
    start_ms: int
    end_ms: int
    ticks: Path
    rows: int
    price_decimals: int  # the most decimals any price or level in the range has (0-4)
    initial: Book | None


def decimals(values: npt.NDArray[np.float64]) -> int:
    """The fewest decimals (0-4) that write every value exactly (Polymarket's finest tick is 0.0001)."""
    for d in range(5):
        scaled = values * 10.0**d
        if values.size == 0 or bool(np.all(np.abs(scaled - np.round(scaled)) < 1e-6)):
            return d
    return 4


def open_source(client: Client, asset_id: str, start: TimeLike, end: TimeLike, workdir: Path, progress: bool | None) -> Source:
    """Download the range's ticks to ``workdir`` and read the book at ``start``; precision is known after this."""
    start_ms, end_ms = to_ms(start, "start"), to_ms(end, "end")
    path = workdir / f"ticks_{asset_id[:16]}_{start_ms}_{end_ms}.parquet"
    params = {"asset_id": asset_id, "start": start_ms, "end": end_ms, "format": "parquet", "fields": "all"}
    # Parquet is compressed already: a second compression would only cost CPU on both ends.
    with client._t.stream("GET", "/v1/ticks/export", params=params, headers={"Accept-Encoding": "identity"}) as response:
        result = write_stream(response.iter_bytes(1 << 20), path, "parquet", Progress(f"ticks {asset_id[:12]}…", progress))
    file = pq.ParquetFile(path)
    price_decimals = 0
    for batch in file.iter_batches(batch_size=_BATCH_ROWS, columns=["price"]):
        price_decimals = max(price_decimals, decimals(batch.column(0).to_numpy()))
    initial = _book_before(client, asset_id, start_ms)
    if initial is not None:
        price_decimals = max(price_decimals, decimals(np.array([p for p, _ in initial.bids + initial.asks], dtype=np.float64)))
    return Source(asset_id, start_ms, end_ms, path, result.rows, price_decimals, initial)


def _book_before(client: Client, asset_id: str, start_ms: int) -> Book | None:
    from .errors import NotFound

    try:
        data = client._t.call("GET", "/v1/orderbook", params={"asset_id": asset_id, "timestamp": start_ms - 1, "limit": MAX_LEVELS})["data"]
    except NotFound:
        return None
    t = int(data["timestamp"])
    return Book(t, float(t), 0, _levels(data["bids"]), _levels(data["asks"]))


def _levels(rows: list[dict[str, Any]]) -> list[Level]:
    if len(rows) >= MAX_LEVELS:
        # The API's cap: a deeper side (possible at a 0.001 tick) loses its worst levels here.
        warnings.warn(f"a book side has {MAX_LEVELS} levels, the most the API returns: deeper levels are missing", stacklevel=2)
    return [(float(r["price"]), float(r["size"])) for r in rows]


def exchange_books(client: Client, asset_id: str, start_ms: int, end_ms: int) -> Iterator[tuple[int, list[Level], list[Level]]]:
    """Every exchange ``book`` of the asset in ``[start, end]`` as (t, bids, asks), ascending, a page at a time.

    Pages continue from the last page's final millisecond, dropping that millisecond's books from the
    page first, so books sharing a millisecond are never split across pages (and so never skipped)."""
    since = start_ms
    while True:
        params = {"asset_id": asset_id, "since": since, "until": end_ms, "limit": _RANGE_PAGE, "depth": MAX_LEVELS}
        page = client._t.call("GET", "/v1/orderbook/range", params=params)["data"]
        if len(page) < _RANGE_PAGE:
            for b in page:
                yield int(b["timestamp"]), _levels(b["bids"]), _levels(b["asks"])
            return
        last = int(page[-1]["timestamp"])
        whole = [b for b in page if int(b["timestamp"]) < last]
        if not whole:
            raise RuntimeError(f"more than {_RANGE_PAGE} books of {asset_id} at {last} ms: cannot page through them")
        for b in whole:
            yield int(b["timestamp"]), _levels(b["bids"]), _levels(b["asks"])
        since = last


def messages(client: Client, source: Source) -> Iterator[Message]:
    """The range's messages in stored ``(t, seq)`` order (module docstring)."""
    books = exchange_books(client, source.asset_id, source.start_ms, source.end_ms)
    pending: Changes | None = None
    for batch in pq.ParquetFile(source.ticks).iter_batches(batch_size=_BATCH_ROWS, columns=_COLUMNS):
        # pyarrow-stubs type to_pylist() as list[Any | None]; the export's schema fixes the types (t, seq: int;
        # price, size, local_t: float; event, book_side, taker_side: str) and none of these columns is null.
        cols = {name: cast("list[Any]", batch.column(i).to_pylist()) for i, name in enumerate(_COLUMNS)}
        for i in range(batch.num_rows):
            t, event, local_t, seq = cols["t"][i], cols["event"][i], cols["local_t"][i], cols["seq"][i]
            if event == "price_change":
                item = (cols["book_side"][i], cols["price"][i], cols["size"][i])
                if pending is not None and pending.t == t and pending.local_t == local_t:
                    pending.items.append(item)
                    pending.seqs.append(seq)
                    continue
                if pending is not None:
                    yield pending
                pending = Changes(t, local_t, [item], [seq])
                continue
            if pending is not None:
                yield pending
                pending = None
            if event == "book":
                bt, bids, asks = next(books)
                if bt != t:
                    raise RuntimeError(f"book tick at {t} ms but the next exchange book of /v1/orderbook/range is at {bt} ms")
                yield Book(t, local_t, seq, bids, asks)
            else:
                yield Trade(t, local_t, seq, cols["price"][i], cols["size"][i], cols["taker_side"][i])
    if pending is not None:
        yield pending
