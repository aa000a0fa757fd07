"""NautilusTrader data from tickhouse: ``BinaryOption`` instruments, ``OrderBookDelta`` s and ``TradeTick`` s
of Polymarket tokens as they were (``pip install 'tickhouse[nautilus]'``, NautilusTrader 1.221).

``MarketChannel.to_nautilus(catalog_path)`` (``Client.market_channel``) writes them to a
``ParquetDataCatalog`` with Nautilus's own ``write_data`` in bounded chunks; ``.to_nautilus()`` returns them
in memory. The mapping (the Python client's README, "Backtesting in NautilusTrader", says the same for users):

- **Instrument**: one ``BinaryOption`` per token, id ``{condition_id}-{asset_id}.POLYMARKET`` as Nautilus's
  Polymarket adapter names them, fields as its ``parse_instrument`` sets them (size precision 6), its
  currency the collateral at ``start`` (``collateral``: USDC.e before Polymarket's CLOB V2 cut-over,
  2026-04-28 11:00 UTC, pUSD from then on), from ``/v1/instruments`` at ``start``: price increment = the tick size then, minimum quantity = the
  minimum order, ``taker_fee`` = the fee schedule's rate (0 when none). Expiration = the resolution time
  when the market had resolved by ``end``, else ``end`` + 10 years (the adapter's own fallback; Nautilus
  does not enforce it in backtests). ``info`` holds the instrument at ``start`` and at ``end``.
- **Tick size changes.** Price precision is fixed per catalog file and per instrument, and a trade at a
  finer price than the instrument's aborts a backtest. So when any price in the range has more decimals
  than the tick at ``start`` (the tick became finer inside the range, or the stored tick is a default),
  the instrument takes the finest precision the range needs and its increment becomes that tick: the
  whole export shares one precision. Strategies that must respect the coarser tick round with it.
- **Book**: an exchange ``book`` becomes CLEAR + one ADD per level, flagged ``F_SNAPSHOT``; a ``price_change``
  message becomes one UPDATE per item (DELETE with size 0 removes); the last delta of every message has
  flags exactly ``F_LAST`` (128): the data engine's ``buffer_deltas`` closes a batch only on that exact
  value, so ``F_SNAPSHOT | F_LAST`` would merge a book into the next message. Messages are rebuilt as
  ``tickhouse.market_channel`` says. The book just before ``start`` opens the stream as a snapshot.
- **Times**: ``ts_event`` = exchange time; ``ts_init`` = receive time (``local_t``), raised to the previous
  ``ts_init`` wherever exchange order and arrival order disagree, because Nautilus orders catalog files
  and backtests by ``ts_init`` and the stored order is ``(t, seq)``; ``sequence`` = the stored ``seq``.
- **Trades**: aggressor from the taker side (``NO_AGGRESSOR`` where none was stored); ``trade_id`` = the
  36 hex digits of ``blake2b("{asset_id}:{t}:{seq}", digest_size=18)``: stable for the stored data, and
  within ``TradeId``'s 36 characters (a 66-character transaction hash is refused).
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:
    from nautilus_trader.backtest.models import FeeModel
    from nautilus_trader.model.currencies import USDC_POS
    from nautilus_trader.model.data import BookOrder, OrderBookDelta, TradeTick  # type: ignore[import-not-found, unused-ignore]  # Cython module without stubs
    from nautilus_trader.model.enums import AggressorSide, AssetClass, BookAction, CurrencyType, LiquiditySide, OrderSide, RecordFlag
    from nautilus_trader.model.identifiers import InstrumentId, Symbol, TradeId  # type: ignore[import-not-found, unused-ignore]  # Cython module without stubs
    from nautilus_trader.model.instruments import BinaryOption
    from nautilus_trader.model.objects import QUANTITY_MAX, Currency, Money, Price, Quantity  # type: ignore[import-not-found, unused-ignore]  # Cython module without stubs
    from nautilus_trader.persistence.catalog.parquet import ParquetDataCatalog
except ImportError as missing:  # pragma: no cover - depends on the installed extra
    raise ImportError("tickhouse.nautilus needs NautilusTrader: pip install 'tickhouse[nautilus]'") from missing

from . import market_channel as mm
from ._time import to_ms

if TYPE_CHECKING:
    from .market_channel import MarketChannel

VENUE = "POLYMARKET"
SIZE_PRECISION = 6  # the adapter's: "trades are reported with USDC.e increments"
CHUNK_OBJECTS = 200_000  # objects per catalog write: ~200 B each live, about twice that while serialised
_NS = 1_000_000
_TEN_YEARS_MS = 3_652 * 86_400_000
F_LAST = int(RecordFlag.F_LAST)
F_SNAPSHOT = int(RecordFlag.F_SNAPSHOT)

# Polymarket's collateral: USDC.e (bridged USDC) until the CLOB V2 cut-over, pUSD (Polymarket USD, 1:1
# USDC-backed, 6 decimals) after it. The cut-over began at 11:00 UTC on 2026-04-28 with about an hour
# without trading, so no trade lies between the two.
CLOB_V2_CUTOVER_MS = 1_777_374_000_000  # 2026-04-28T11:00:00Z
PUSD = Currency("pUSD", 6, 0, "Polymarket USD", CurrencyType.CRYPTO)
# Registered so that a catalog read back names the same currency (6 decimals) by its code.
Currency.register(PUSD, overwrite=False)


def collateral(at_ms: int) -> Currency:
    """The currency Polymarket settled in at ``at_ms`` (Unix ms): USDC.e before CLOB V2, pUSD from its cut-over on."""
    return USDC_POS if at_ms < CLOB_V2_CUTOVER_MS else PUSD


def instrument_id(condition_id: str, asset_id: str) -> InstrumentId:
    """``{condition_id}-{asset_id}.POLYMARKET``, as ``get_polymarket_instrument_id`` of Nautilus's adapter."""
    return InstrumentId.from_str(f"{condition_id}-{asset_id}.{VENUE}")


def trade_id(asset_id: str, t_ms: int, seq: int) -> TradeId:
    return TradeId(hashlib.blake2b(f"{asset_id}:{t_ms}:{seq}".encode(), digest_size=18).hexdigest())


def _decimals(text: str) -> int:
    return len(text.split(".")[1].rstrip("0")) if "." in text else 0


def binary_option(at_start: Mapping[str, Any], at_end: Mapping[str, Any], price_decimals: int, start_ms: int) -> BinaryOption:
    """The token as ``/v1/instruments`` described it at ``start`` (``at_start``) and ``end`` (module docstring)."""
    tick = format(Decimal(str(at_start["tick_size"])).normalize(), "f")
    precision = max(_decimals(tick), price_decimals)
    increment = Price.from_str(tick) if precision == _decimals(tick) else Price(10.0**-precision, precision)
    fees = at_start["fees"] or {}
    resolved_at = at_end.get("resolved_at") if at_end.get("status") == "resolved" else None
    expiration_ms = int(resolved_at) if resolved_at is not None else to_ms(at_end["as_of"], "end") + _TEN_YEARS_MS
    ts = start_ms * _NS
    return BinaryOption(
        instrument_id=instrument_id(at_start["market"], at_start["asset_id"]),
        raw_symbol=Symbol(at_start["asset_id"]),
        asset_class=AssetClass.ALTERNATIVE,
        currency=collateral(start_ms),
        price_precision=precision,
        size_precision=SIZE_PRECISION,
        price_increment=increment,
        size_increment=Quantity(10.0**-SIZE_PRECISION, SIZE_PRECISION),
        activation_ns=0,
        expiration_ns=expiration_ms * _NS,
        ts_event=ts,
        ts_init=ts,
        min_quantity=Quantity(float(at_start["min_order_size"]), SIZE_PRECISION),
        maker_fee=Decimal(0),
        taker_fee=Decimal(str(fees.get("rate") or 0)),
        outcome=at_start.get("outcome") or None,
        description=at_start.get("question") or None,
        info={"at_start": at_start, "at_end": at_end},
    )


class PolymarketFeeModel(FeeModel):  # type: ignore[misc]  # Cython: no type information
    """Polymarket's taker fee (docs/TIME-MACHINE.md §5): ``size × rate × (p × (1 − p))^exponent``, floored
    to 5 decimals; makers pay nothing. ``rate``/``exponent`` from the instrument's fee schedule at
    ``start`` (``info``), or the arguments when given. Nautilus's default ``MakerTakerFeeModel`` would
    charge ``notional × taker_fee`` instead."""

    def __init__(self, rate: float | None = None, exponent: float | None = None) -> None:
        super().__init__()
        self.rate = rate
        self.exponent = exponent

    def get_commission(self, order: Any, fill_qty: Quantity, fill_px: Price, instrument: Any) -> Money:
        if order.liquidity_side != LiquiditySide.TAKER:
            return Money(0, instrument.quote_currency)
        fees = ((instrument.info or {}).get("at_start") or {}).get("fees") or {}
        rate = self.rate if self.rate is not None else float(fees.get("rate") or 0)
        exponent = self.exponent if self.exponent is not None else float(fees.get("exponent") or 1)
        p = fill_px.as_double()
        fee = fill_qty.as_double() * rate * (p * (1 - p)) ** exponent
        return Money(int(fee * 100_000 + 1e-9) / 100_000, instrument.quote_currency)


class _Converter:
    """Messages of one token → Nautilus objects, keeping ``ts_init`` non-decreasing (module docstring)."""

    def __init__(self, instrument: BinaryOption, asset_id: str, start_ms: int) -> None:
        self.iid = instrument.id
        self.asset_id = asset_id
        self.precision = instrument.price_precision
        self.zero = Quantity(0, SIZE_PRECISION)
        self.ts_init = start_ms * _NS - 1  # the opening book is "just before start"

    def _init(self, local_t: float) -> int:
        self.ts_init = max(self.ts_init, round(local_t * 1000) * 1000)
        return self.ts_init

    def _size(self, size: float, t: int) -> Quantity:
        # Nautilus's own error names neither the token nor the instant; a size past what a Quantity
        # holds (34 trillion at standard precision) cannot be represented, so say where it is.
        if size > QUANTITY_MAX:
            raise ValueError(f"asset {self.asset_id} at {t} ms: size {size} is larger than NautilusTrader's QUANTITY_MAX ({QUANTITY_MAX})")
        return Quantity(size, SIZE_PRECISION)

    def book(self, b: mm.Book, ts_init: int | None = None) -> list[OrderBookDelta]:
        ts_event = b.t * _NS
        ts_init = self._init(b.local_t) if ts_init is None else ts_init
        out = [OrderBookDelta(self.iid, BookAction.CLEAR, None, F_SNAPSHOT, b.seq, ts_event, ts_init)]
        for side, levels in ((OrderSide.BUY, b.bids), (OrderSide.SELL, b.asks)):
            for price, size in levels:
                order = BookOrder(side, Price(price, self.precision), self._size(size, b.t), 0)
                out.append(OrderBookDelta(self.iid, BookAction.ADD, order, F_SNAPSHOT, b.seq, ts_event, ts_init))
        last = out[-1]
        out[-1] = OrderBookDelta(self.iid, last.action, None if last.action == BookAction.CLEAR else last.order, F_LAST, b.seq, ts_event, ts_init)
        return out

    def changes(self, c: mm.Changes) -> list[OrderBookDelta]:
        ts_event = c.t * _NS
        ts_init = self._init(c.local_t)
        out = []
        n = len(c.items)
        for i, ((side, price, size), seq) in enumerate(zip(c.items, c.seqs, strict=True)):
            book_side = OrderSide.BUY if side == "bid" else OrderSide.SELL
            action = BookAction.UPDATE if size > 0 else BookAction.DELETE
            order = BookOrder(book_side, Price(price, self.precision), self._size(size, c.t) if size > 0 else self.zero, 0)
            out.append(OrderBookDelta(self.iid, action, order, F_LAST if i == n - 1 else 0, seq, ts_event, ts_init))
        return out

    def trade(self, tr: mm.Trade) -> TradeTick:
        aggressor = {"buy": AggressorSide.BUYER, "sell": AggressorSide.SELLER}.get(tr.taker_side, AggressorSide.NO_AGGRESSOR)
        return TradeTick(
            self.iid,
            Price(tr.price, self.precision),
            self._size(tr.size, tr.t),
            aggressor,
            trade_id(self.asset_id, tr.t, tr.seq),
            tr.t * _NS,
            self._init(tr.local_t),
        )

    def convert(self, message: mm.Message) -> list[Any]:
        if isinstance(message, mm.Book):
            return list(self.book(message))
        if isinstance(message, mm.Changes):
            return list(self.changes(message))
        return [self.trade(message)]


@dataclass(frozen=True)
class NautilusData:
    """What ``MarketChannel.to_nautilus()`` returns: add ``instruments`` to the engine first, then ``deltas`` and ``trades``."""

    instruments: list[BinaryOption]
    deltas: list[OrderBookDelta]
    trades: list[TradeTick]


@dataclass(frozen=True)
class CatalogResult:
    path: Path
    instruments: list[BinaryOption]
    ticks: int  # rows read from the service
    deltas: int
    trades: int


def _instrument(channel: MarketChannel) -> BinaryOption:
    return binary_option(channel.instrument_at_start, channel.instrument_at_end, channel.price_decimals, channel.start_ms)


def _objects(channel: MarketChannel, instrument: BinaryOption) -> Iterator[Any]:
    """Every delta and trade of the token in stored order, the opening book first."""
    converter = _Converter(instrument, channel.asset_id, channel.start_ms)
    if channel.initial is not None:
        yield from converter.book(channel.initial, converter.ts_init)
    for message in channel.messages():
        yield from converter.convert(message)


def nautilus_data(channels: Iterable[MarketChannel]) -> NautilusData:
    """Each channel's instrument, deltas and trades, in memory."""
    instruments: list[BinaryOption] = []
    deltas: list[OrderBookDelta] = []
    trades: list[TradeTick] = []
    for channel in channels:
        instrument = _instrument(channel)
        instruments.append(instrument)
        for obj in _objects(channel, instrument):
            (trades if isinstance(obj, TradeTick) else deltas).append(obj)
    return NautilusData(instruments, deltas, trades)


def to_catalog(channels: Iterable[MarketChannel], catalog_path: str | Path, *, chunk: int = CHUNK_OBJECTS, progress: bool | None = None) -> CatalogResult:
    """Write each channel's instrument, deltas and trades to the catalog at ``catalog_path``, ``chunk`` objects at a time."""
    catalog = ParquetDataCatalog(str(catalog_path))
    instruments = []
    totals = [0, 0, 0]
    for channel in channels:
        instrument = _instrument(channel)
        _refuse_overlap(Path(catalog_path), instrument.id)
        catalog.write_data([instrument])
        instruments.append(instrument)
        line = _Line(f"catalog {channel.asset_id[:12]}…", channel.rows, progress)
        for deltas, trades in _write_chunks(catalog, _objects(channel, instrument), chunk):
            totals[1] += deltas
            totals[2] += trades
            line.update(totals[1] + totals[2])
        totals[0] += channel.rows
        line.update(totals[1] + totals[2], final=True)
    return CatalogResult(Path(catalog_path), instruments, totals[0], totals[1], totals[2])


def _write_chunks(catalog: ParquetDataCatalog, objects: Iterable[Any], chunk: int) -> Iterator[tuple[int, int]]:
    """Write ``objects`` in chunks cut only between distinct ``ts_init`` values: the catalog names a file by
    its first and last ``ts_init`` and requires files' intervals to be disjoint (a shared bound fails,
    an equal one overwrites). Yields (deltas, trades) per chunk written."""
    buffer: list[Any] = []
    for obj in objects:
        if len(buffer) >= chunk and obj.ts_init != buffer[-1].ts_init:
            yield _flush(catalog, buffer)
            buffer = []
        buffer.append(obj)
    if buffer:
        yield _flush(catalog, buffer)


def _flush(catalog: ParquetDataCatalog, buffer: list[Any]) -> tuple[int, int]:
    trades = sum(1 for o in buffer if isinstance(o, TradeTick))
    catalog.write_data(buffer)
    return len(buffer) - trades, trades


def _refuse_overlap(root: Path, iid: InstrumentId) -> None:
    for kind in ("order_book_delta", "trade_tick"):
        if (root / "data" / kind / iid.value).exists():
            raise FileExistsError(f"{root} already holds {kind} data of {iid}: write to a new catalog (overlapping files are overwritten or refused)")


class _Line:
    def __init__(self, label: str, ticks: int, enabled: bool | None) -> None:
        self.label, self.ticks = label, ticks
        self.enabled = sys.stderr.isatty() if enabled is None else enabled

    def update(self, objects: int, final: bool = False) -> None:
        if self.enabled:
            sys.stderr.write(f"\r{self.label}: {self.ticks:,} ticks → {objects:,} objects written" + ("\n" if final else ""))
            sys.stderr.flush()
