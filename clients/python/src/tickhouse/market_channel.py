"""One token's market channel over a range, as the data object the backtesting converters read.

``Client.market_channel(asset_id, start, end)`` fetches, a ``MarketChannel`` converts (databento-python's
``Historical`` → ``DBNStore`` shape): ``.to_nautilus()``, ``.to_hftbacktest()``, ``.to_pandas()``, each
importing its optional engine only when called. It is built from the client's public calls only
(docs/API.md §4, docs/INGEST.md §2):

- the book as it was just before ``start``: ``Client.book(asset, start - 1, limit=100)`` (so nothing at
  ``start`` is applied twice);
- every tick in ``[start, end]`` with ``fields="all"``: ``Client.export(…, format="parquet")`` to a
  temporary file, read back one batch at a time (memory bounded by the export's row group, not by the
  range);
- the levels of every exchange ``book`` in the range: ``Client.book_range`` without ``interval``, a page at
  a time, matched in order to the ``book`` ticks (a ``book`` tick carries only its best prices);
- the instrument at ``start`` and at ``end`` (``Client.instrument``), for the converters that need one.

**Messages.** A stored ``price_change`` row is one item of a frame's message; the rows of one message
share the exchange time ``t`` and the receive time ``local_t`` (every row of a frame gets the frame's
stamp, INGEST.md §4) and are consecutive in ``seq``. So a message is a maximal run of consecutive
``price_change`` ticks with equal ``(t, local_t)``. Where no receive time was stored, ``local_t = t``
and two messages of one millisecond merge into one: the book after the merged message is the same.
A ``book`` and a ``last_trade_price`` are one message each.
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast, overload

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow.parquet as pq

from . import _frames
from ._time import to_ms
from ._types import Instrument
from .errors import NotFound

if TYPE_CHECKING:
    from types import TracebackType

    from ._book import Book as ApiBook
    from ._client import AssetId, Client
    from ._time import TimeLike
    from .hftbacktest import HftResult, LocalTime
    from .nautilus import CatalogResult, NautilusData

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


def decimals(values: npt.NDArray[np.float64]) -> int:
    """The fewest decimals (0-4) that write every value exactly (Polymarket's finest tick is 0.0001)."""
    for d in range(5):
        scaled = values * 10.0**d
        if values.size == 0 or bool(np.all(np.abs(scaled - np.round(scaled)) < 1e-6)):
            return d
    return 4


class MarketChannel:
    """One token's stored market channel over ``[start, end]``: the opening book, then every message.

    Build it with ``Client.market_channel``; close it (or use it as a context manager) to delete its
    temporary file of ticks.

    Attributes
    ----------
    asset_id : str
    start_ms, end_ms : int
        The range, inclusive, Unix ms.
    rows : int
        Ticks in the range.
    price_decimals : int
        The most decimals any price or level in the range has (0-4).
    initial : Book or None
        The book just before ``start`` (None: the token had none yet).
    """

    def __init__(self, client: Client, asset_id: AssetId, start: TimeLike, end: TimeLike, *, progress: bool | None = None) -> None:
        self.asset_id = str(asset_id)
        self.start_ms, self.end_ms = to_ms(start, "start"), to_ms(end, "end")
        self._client = client
        self._dir = tempfile.TemporaryDirectory(prefix="tickhouse-")
        try:
            self.ticks_path = Path(self._dir.name) / f"ticks_{self.asset_id[:16]}_{self.start_ms}_{self.end_ms}.parquet"
            self.rows = client.export(self.asset_id, self.start_ms, self.end_ms, self.ticks_path, "parquet", fields="all", progress=progress).rows
            price_decimals = 0
            for batch in pq.ParquetFile(self.ticks_path).iter_batches(batch_size=_BATCH_ROWS, columns=["price"]):
                price_decimals = max(price_decimals, decimals(batch.column(0).to_numpy()))
            self.initial = self._book_before()
            if self.initial is not None:
                levels = [p for p, _ in self.initial.bids + self.initial.asks]
                price_decimals = max(price_decimals, decimals(np.array(levels, dtype=np.float64)))
            self.price_decimals = price_decimals
        except BaseException:
            self._dir.cleanup()
            raise

    def __repr__(self) -> str:
        return f"MarketChannel({self.asset_id!r}, {self.start_ms}, {self.end_ms}, rows={self.rows})"

    def close(self) -> None:
        """Delete the temporary file of ticks (the channel cannot be read after)."""
        self._dir.cleanup()

    def __enter__(self) -> MarketChannel:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    @cached_property
    def instrument_at_start(self) -> Instrument:
        """``Client.instrument`` at ``start``: the tick size, fees and status then."""
        return self._client.instrument(self.asset_id, self.start_ms)

    @cached_property
    def instrument_at_end(self) -> Instrument:
        """``Client.instrument`` at ``end``: the winner, when the token resolved within the range."""
        return self._client.instrument(self.asset_id, self.end_ms)

    # --- reading ----------------------------------------------------------------------------------

    def messages(self) -> Iterator[Message]:
        """Every message in ``[start, end]`` in stored ``(t, seq)`` order (module docstring); the opening
        book is ``initial``, not among them."""
        books = self._exchange_books()
        # The price_change message being gathered: its (t, local_t), items and their seqs. A Changes is
        # made once the message is whole (it is frozen: never appended to after).
        key: tuple[int, float] | None = None
        items: list[tuple[str, float, float]] = []
        seqs: list[int] = []
        for batch in pq.ParquetFile(self.ticks_path).iter_batches(batch_size=_BATCH_ROWS, columns=_COLUMNS):
            # pyarrow-stubs type to_pylist() as list[Any | None]; the export's schema fixes the types (t, seq: int;
            # price, size, local_t: float; event, book_side, taker_side: str) and none of these columns is null.
            cols = {name: cast("list[Any]", batch.column(i).to_pylist()) for i, name in enumerate(_COLUMNS)}
            for i in range(batch.num_rows):
                t, event, local_t, seq = cols["t"][i], cols["event"][i], cols["local_t"][i], cols["seq"][i]
                if key is not None and (event != "price_change" or key != (t, local_t)):
                    yield Changes(key[0], key[1], items, seqs)
                    key, items, seqs = None, [], []
                if event == "price_change":
                    key = (t, local_t)
                    items.append((cols["book_side"][i], cols["price"][i], cols["size"][i]))
                    seqs.append(seq)
                elif event == "book":
                    bt, bids, asks = next(books)
                    if bt != t:
                        raise RuntimeError(f"book tick at {t} ms but the next exchange book of /v1/orderbook/range is at {bt} ms")
                    yield Book(t, local_t, seq, bids, asks)
                else:
                    yield Trade(t, local_t, seq, cols["price"][i], cols["size"][i], cols["taker_side"][i])
        if key is not None:
            yield Changes(key[0], key[1], items, seqs)

    def _book_before(self) -> Book | None:
        try:
            book = self._client.book(self.asset_id, self.start_ms - 1, limit=MAX_LEVELS)
        except NotFound:
            return None
        t = _ms_of(book)
        return Book(t, float(t), 0, _levels(book.bids), _levels(book.asks))

    def _exchange_books(self) -> Iterator[tuple[int, list[Level], list[Level]]]:
        """Every exchange ``book`` of the asset in ``[start, end]`` as (t, bids, asks), ascending, a page at a time.

        Pages continue from the last page's final millisecond, dropping that millisecond's books from the
        page first, so books sharing a millisecond are never split across pages (and so never skipped)."""
        since = self.start_ms
        while True:
            page = self._client.book_range(self.asset_id, since, self.end_ms, limit=_RANGE_PAGE, depth=MAX_LEVELS)
            if len(page) < _RANGE_PAGE:
                for b in page:
                    yield _ms_of(b), _levels(b.bids), _levels(b.asks)
                return
            last = _ms_of(page[-1])
            whole = [b for b in page if _ms_of(b) < last]
            if not whole:
                raise RuntimeError(f"more than {_RANGE_PAGE} books of {self.asset_id} at {last} ms: cannot page through them")
            for b in whole:
                yield _ms_of(b), _levels(b.bids), _levels(b.asks)
            since = last

    # --- converting ---------------------------------------------------------------------------------

    def to_pandas(self) -> pd.DataFrame:
        """The range's ticks with every field (``Client.ticks(…, fields="all")``'s frame)."""
        schema = _frames.tick_schema(_frames.tick_fields("all"))
        return _frames.convert(_frames.read_ticks(self.ticks_path.read_bytes(), "parquet", schema), "pandas")

    @overload
    def to_nautilus(self, catalog_path: None = ...) -> NautilusData: ...
    @overload
    def to_nautilus(self, catalog_path: str | Path, *, progress: bool | None = ...) -> CatalogResult: ...
    def to_nautilus(self, catalog_path: str | Path | None = None, *, progress: bool | None = None) -> NautilusData | CatalogResult:
        """NautilusTrader's ``BinaryOption``, order book deltas and trades of the token (needs ``tickhouse[nautilus]``).

        Parameters
        ----------
        catalog_path : str or Path, optional
            Without it, the objects in memory (``NautilusData``: add ``instruments`` to the engine
            first); with it, written to the ``ParquetDataCatalog`` there in bounded chunks
            (``CatalogResult``; a token the catalog already holds is refused).
        progress : bool, optional
            A progress line on stderr while writing a catalog (default: when stderr is a terminal).
        """
        from . import nautilus

        if catalog_path is None:
            return nautilus.nautilus_data([self])
        return nautilus.to_catalog([self], catalog_path, progress=progress)

    def to_hftbacktest(self, path: str | Path, *, local: LocalTime = "receive") -> HftResult:
        """Save hftbacktest's event array of the token to ``path`` (``.npz``, key ``data``).

        ``local="exchange"`` sets ``local_ts = exch_ts`` (the strategy sees each event at its exchange
        time, no feed latency); the default is the receive time."""
        from . import hftbacktest

        return hftbacktest.to_hftbacktest(self, path, local=local)


def _ms_of(book: ApiBook) -> int:
    return book.timestamp.value // 1_000_000


def _levels(rows: pd.DataFrame) -> list[Level]:
    if len(rows) >= MAX_LEVELS:
        # The API's cap: a deeper side (possible at a 0.001 tick) loses its worst levels here.
        warnings.warn(f"a book side has {MAX_LEVELS} levels, the most the API returns: deeper levels are missing", stacklevel=2)
    prices: list[Any] = rows["price"].tolist()
    sizes: list[Any] = rows["size"].tolist()
    return [(float(p), float(s)) for p, s in zip(prices, sizes, strict=True)]
