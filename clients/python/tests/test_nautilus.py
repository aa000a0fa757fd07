"""``MarketChannel.to_nautilus`` (catalog and in memory) against the running service, checked by NautilusTrader's own code:
its ``OrderBook`` after the deltas equals ``/v1/orderbook`` at 200 instants, its catalog reads back what
was written, its data engine sees one batch per Polymarket message, and the trades are ``/v1/ticks``' trades."""

from __future__ import annotations

import bisect
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import httpx
import market_frames
import pandas as pd
import pytest
from market_frames import frames_service  # noqa: F401  (a fixture)

nautilus_trader = pytest.importorskip("nautilus_trader", reason="pip install './clients/python[nautilus]'")

from nautilus_trader.model.book import OrderBook  # noqa: E402
from nautilus_trader.model.data import OrderBookDelta, TradeTick  # noqa: E402
from nautilus_trader.model.enums import AggressorSide, BookType  # noqa: E402
from nautilus_trader.persistence.catalog.parquet import ParquetDataCatalog  # noqa: E402

import tickhouse  # noqa: E402
from tickhouse import market_channel as mm  # noqa: E402
from tickhouse import nautilus  # noqa: E402

HOUR = 3_600_000
INSTANTS = 200


@pytest.fixture(scope="module")
def window(big_asset: dict[str, Any]) -> dict[str, Any]:
    """The busiest demo asset from an hour in (so a book exists before ``start``) to its last tick."""
    return {"asset_id": str(big_asset["asset_id"]), "start": int(big_asset["first"]) + HOUR, "end": int(big_asset["last"])}


@pytest.fixture(scope="module")
def data(client: tickhouse.Client, window: dict[str, Any]) -> nautilus.NautilusData:
    with client.market_channel(window["asset_id"], window["start"], window["end"]) as channel:
        return channel.to_nautilus()


@pytest.fixture(scope="module")
def ticks(client: tickhouse.Client, window: dict[str, Any]) -> Any:
    return client.ticks(window["asset_id"], window["start"], window["end"], fields="all", via="json")


def _instants(ticks: Any, start: int, end: int) -> list[int]:
    """200 instants: every re-sent book's millisecond, the busiest milliseconds (bursts of several
    changes), the millisecond before each of those, the range's ends, and evenly spaced fill."""
    t = _ms(ticks)
    books = sorted(set(t[ticks["event"] == "book"]))[:40]
    counts = t.value_counts()
    bursts = sorted(int(x) for x in counts[counts > 1].index[:40])
    chosen = set(books) | set(bursts) | {b - 1 for b in books + bursts if b - 1 >= start} | {start, end}
    step = (end - start) // INSTANTS
    x = start + 7
    while len(chosen) < INSTANTS:
        chosen.add(x)
        x += step
    return sorted(chosen)[:INSTANTS]


def _delta(d: OrderBookDelta) -> dict[str, Any]:
    """A delta's fields; a CLEAR's absent order is read back from the catalog as a zero order (harmless)."""
    fields = OrderBookDelta.to_dict(d)
    return {k: v for k, v in fields.items() if k != "order"} if fields["action"] == "CLEAR" else fields


def _ms(ticks: Any) -> Any:
    return ticks["t"].dt.as_unit("ms").astype("int64")


SIZE = Decimal("0.000001")


def _size(x: float | Any) -> Decimal:
    """A size at 6 decimals, exactly: a Nautilus ``Quantity`` from its decimal value (``as_double`` and
    ``BookLevel.size()`` lose digits above 2^53 / 1e6, e.g. 5531031963.81 reads 5531031963.809999), an
    API size from its JSON text (the shortest repr of the float)."""
    return (x.as_decimal() if hasattr(x, "as_decimal") else Decimal(repr(float(x)))).quantize(SIZE)


def _levels(levels: Any, precision: int) -> list[tuple[float, Decimal]]:
    return [(round(level.price.as_double(), precision), sum((_size(o.size) for o in level.orders()), Decimal(0))) for level in levels]


def _api_levels(levels: list[dict[str, Any]], precision: int) -> list[tuple[float, Decimal]]:
    return [(round(x["price"], precision), _size(x["size"])) for x in levels]


def _compare_books(data: nautilus.NautilusData, http: httpx.Client, asset_id: str, instants: list[int]) -> list[dict[str, Any]]:
    """Nautilus's OrderBook after the deltas with ``ts_event`` ≤ each instant against ``/v1/orderbook``
    there, level by level (price at the instrument's precision, size at 6 decimals); returns the books."""
    instrument = data.instruments[0]
    p = instrument.price_precision
    book = OrderBook(instrument.id, BookType.L2_MBP)
    deltas = iter(data.deltas)
    pending: OrderBookDelta | None = next(deltas)
    seen = []
    for at in instants:
        while pending is not None and pending.ts_event <= at * 1_000_000:
            book.apply_delta(pending)
            pending = next(deltas, None)
        expected = http.get("/v1/orderbook", params={"asset_id": asset_id, "timestamp": at, "limit": 100}).json()["data"]
        assert _levels(book.bids(), p) == _api_levels(expected["bids"], p), at
        assert _levels(book.asks(), p) == _api_levels(expected["asks"], p), at
        seen.append(expected)
    return seen


def test_book_equals_orderbook_at_200_instants(data: nautilus.NautilusData, ticks: Any, window: dict[str, Any], raw: httpx.Client) -> None:
    market = raw.get("/v1/orderbook", params={"asset_id": window["asset_id"], "timestamp": window["end"]}).json()["data"]["market"]
    assert data.instruments[0].id.value == f"{market}-{window['asset_id']}.POLYMARKET"
    instants = _instants(ticks, window["start"], window["end"])
    assert len(instants) == INSTANTS
    books = _compare_books(data, raw, window["asset_id"], instants)
    book_ms = set(_ms(ticks)[ticks["event"] == "book"])
    assert sum(b["timestamp"] in book_ms for b in books) >= 10  # re-sent books were among the instants


def test_book_equals_orderbook_with_empty_sides_bursts_and_resent_books(frames_service: tuple[str, httpx.Client, tickhouse.Client]) -> None:  # noqa: F811
    _, http, c = frames_service
    start = market_frames.T0 + 1  # the opening book (at T0) comes from /v1/orderbook just before start
    end = start + 3_600_000
    with c.market_channel(market_frames.YES, start, end) as channel:
        data = channel.to_nautilus()
    assert data.instruments[0].id.value == f"{market_frames.MARKET}-{market_frames.YES}.POLYMARKET"
    assert data.instruments[0].price_precision == 3  # half-cent prices under a stated 0.01 tick
    ticks = c.ticks(market_frames.YES, start, end, fields="all", via="json")
    moments = sorted(set(_ms(ticks)))
    instants = sorted({start} | set(moments) | {m - 1 for m in moments if m - 1 >= start})
    assert len(instants) >= INSTANTS
    books = _compare_books(data, http, market_frames.YES, instants)
    assert any(not b["asks"] and b["bids"] for b in books)  # ask side empty
    assert any(not b["bids"] and not b["asks"] for b in books)  # the empty book
    assert sum(1 for b in books if b["timestamp"] in set(_ms(ticks)[ticks["event"] == "book"])) >= 4  # re-sent books
    _assert_trades(data, ticks)
    _assert_one_batch_per_message(data, ticks)
    assert {t.aggressor_side for t in data.trades} == {AggressorSide.BUYER, AggressorSide.SELLER}
    # Receive order differs from exchange order somewhere: ts_init was held, never decreased.
    inits = [d.ts_init for d in data.deltas]
    assert inits == sorted(inits)
    assert any(d.ts_init > round(local * 1000) * 1000 for d, local in _first_delta_local_t(data, ticks))


def _first_delta_local_t(data: nautilus.NautilusData, ticks: Any) -> list[tuple[OrderBookDelta, float]]:
    """Each stored price change's delta (matched by ``sequence``) with the tick's receive time (ms)."""
    by_seq = {d.sequence: d for d in data.deltas if d.action != 4}
    local = (ticks["local_t"] - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(1, "us") / 1000
    return [(by_seq[int(s)], float(lt)) for s, lt, e in zip(ticks["seq"], local, ticks["event"], strict=True) if e == "price_change" and int(s) in by_seq]


def _assert_trades(data: nautilus.NautilusData, ticks: Any) -> None:
    trades = ticks[ticks["event"] == "last_trade_price"]
    assert len(data.trades) == len(trades) > 0
    p = data.instruments[0].price_precision
    got = [(t.ts_event // 1_000_000, round(t.price.as_double(), p), _size(t.size), t.aggressor_side) for t in data.trades]
    side = {"buy": AggressorSide.BUYER, "sell": AggressorSide.SELLER, "": AggressorSide.NO_AGGRESSOR}
    want = [(int(r.t.value // 1_000_000), round(r.price, p), _size(r.size), side[r.taker_side]) for r in trades.itertuples()]
    assert got == want
    ids = [t.trade_id.value for t in data.trades]
    assert len(set(ids)) == len(ids) and all(len(i) == 36 for i in ids)


def test_trades_equal_the_ticks_trades(data: nautilus.NautilusData, ticks: Any) -> None:
    _assert_trades(data, ticks)


def _assert_one_batch_per_message(data: nautilus.NautilusData, ticks: Any) -> None:
    """With ``buffer_deltas`` the data engine publishes a batch at each delta flagged exactly F_LAST: one
    per Polymarket message (the opening book, each book, each run of same-frame price changes)."""
    from nautilus_trader.backtest.engine import BacktestEngine, BacktestEngineConfig
    from nautilus_trader.common.actor import Actor
    from nautilus_trader.config import DataEngineConfig, LoggingConfig
    from nautilus_trader.model.enums import AccountType, OmsType
    from nautilus_trader.model.identifiers import Venue
    from nautilus_trader.model.objects import Money

    sizes: list[int] = []
    cash = data.instruments[0].quote_currency

    class Counter(Actor):
        def on_start(self) -> None:
            self.subscribe_order_book_deltas(data.instruments[0].id, book_type=BookType.L2_MBP)

        def on_order_book_deltas(self, deltas: Any) -> None:
            sizes.append(len(deltas.deltas))

    engine = BacktestEngine(BacktestEngineConfig(logging=LoggingConfig(log_level="ERROR"), data_engine=DataEngineConfig(buffer_deltas=True)))
    engine.add_venue(Venue("POLYMARKET"), OmsType.NETTING, AccountType.CASH, [Money(1_000, cash)], base_currency=cash, book_type=BookType.L2_MBP)
    engine.add_instrument(data.instruments[0])
    engine.add_data(data.deltas)
    engine.add_actor(Counter())
    engine.run()
    engine.dispose()
    # Messages, counted from the ticks: each book; each maximal run of price changes sharing (t, local_t).
    expected: list[int] = []
    previous = None
    for row in ticks.itertuples():
        key = (row.t, row.local_t)
        if row.event == "price_change" and previous == key and expected and expected[-1] > 0:
            expected[-1] += 1
        elif row.event == "price_change":
            expected.append(1)
        elif row.event == "book":
            expected.append(0)  # its size is its levels + 1: compared by count below
        previous = key if row.event == "price_change" else None
    assert len(sizes) == 1 + len(expected)  # the opening book first
    assert [s for s, e in zip(sizes[1:], expected, strict=True) if e > 0] == [e for e in expected if e > 0]


def test_one_batch_per_message_in_the_data_engine(data: nautilus.NautilusData, ticks: Any) -> None:
    _assert_one_batch_per_message(data, ticks)


def test_catalog_reads_back_what_nautilus_data_holds(client: tickhouse.Client, data: nautilus.NautilusData, window: dict[str, Any], tmp_path: Path) -> None:
    with client.market_channel(window["asset_id"], window["start"], window["end"]) as channel:
        result = nautilus.to_catalog([channel], tmp_path / "catalog", chunk=5_000, progress=False)
    iid = data.instruments[0].id
    assert (result.deltas, result.trades) == (len(data.deltas), len(data.trades))
    files = list((tmp_path / "catalog" / "data" / "order_book_delta" / iid.value).glob("*.parquet"))
    assert len(files) >= len(data.deltas) // 5_000  # bounded chunks: one file per chunk
    catalog = ParquetDataCatalog(str(tmp_path / "catalog"))
    [instrument] = catalog.instruments()
    assert (instrument.id, instrument.price_precision, instrument.min_quantity) == (iid, data.instruments[0].price_precision, data.instruments[0].min_quantity)
    deltas = catalog.order_book_deltas(instrument_ids=[iid.value])
    assert [_delta(d) for d in deltas] == [_delta(d) for d in data.deltas]
    trades = catalog.trade_ticks(instrument_ids=[iid.value])
    assert [TradeTick.to_dict(t) for t in trades] == [TradeTick.to_dict(t) for t in data.trades]
    with pytest.raises(FileExistsError, match="new catalog"), client.market_channel(window["asset_id"], window["start"], window["end"]) as channel:
        channel.to_nautilus(tmp_path / "catalog", progress=False)


def test_the_deprecated_client_methods_answer_as_the_channel_does(
    client: tickhouse.Client, data: nautilus.NautilusData, window: dict[str, Any], tmp_path: Path
) -> None:
    """Client.to_nautilus / nautilus_data stay one release as thin wrappers over market_channel, with a warning."""
    with pytest.warns(DeprecationWarning, match="market_channel"):
        old = client.nautilus_data(window["asset_id"], window["start"], window["end"])
    assert [_delta(d) for d in old.deltas] == [_delta(d) for d in data.deltas]
    assert [TradeTick.to_dict(t) for t in old.trades] == [TradeTick.to_dict(t) for t in data.trades]
    with pytest.warns(DeprecationWarning, match="market_channel"):
        result = client.to_nautilus([window["asset_id"]], window["start"], window["end"], tmp_path / "old", progress=False)
    assert (result.deltas, result.trades) == (len(data.deltas), len(data.trades))


def test_example_backtest_fills_at_prices_in_the_book(client: tickhouse.Client, data: nautilus.NautilusData, window: dict[str, Any], raw: httpx.Client) -> None:
    """examples/nautilus_backtest.py in Nautilus's BacktestEngine (L2_MBP): every fill is at a level the
    service's book had on the side a market order takes (asks for a buy, bids for a sell) at that instant.

    The backtest clock, and so a fill's ``ts``, is the receive time (``ts_init``), not the exchange time
    ``/v1/orderbook`` takes: the book a fill met is the one after a message whose deltas carry the last
    ``ts_init`` at or before the fill (several messages share one where ``ts_init`` was held), i.e.
    ``/v1/orderbook`` at that message's ``ts_event``. ``data`` is the example's own request."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("nautilus_backtest", Path(__file__).parents[1] / "examples" / "nautilus_backtest.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    sys.modules["nautilus_backtest"] = example  # its dataclasses look their module up there
    spec.loader.exec_module(example)
    fills, pnl = example.run(client, window["asset_id"], window["start"], window["end"])
    assert len(fills) >= 2
    # A market order may take several levels (one fill each); at most one buy of 10 is left open.
    assert sum(f.size if f.side == "BUY" else -f.size for f in fills) in (0, 10)
    events: dict[int, set[int]] = {}  # ts_init → the exchange times (ms) of the messages carrying it
    for d in data.deltas:
        events.setdefault(d.ts_init, set()).add(d.ts_event // 1_000_000)
    inits = sorted(events)
    for f in fills:
        at = inits[bisect.bisect_right(inits, f.ts) - 1]
        seen = []
        for t in sorted(events[at]):
            book = raw.get("/v1/orderbook", params={"asset_id": window["asset_id"], "timestamp": t, "limit": 100}).json()["data"]
            levels = book["asks"] if f.side == "BUY" else book["bids"]
            seen.append((t, [x["price"] for x in levels[:3]]))
            if float(f.price) in [x["price"] for x in levels]:
                break
        else:
            raise AssertionError((f, seen))
    # Cash changes by what the fills paid and received (the demo markets state no fees; a position still
    # open at the end is not cash). Each fill's cash moves as Money, at the collateral's 6 decimals (rounded half
    # away from zero): a partial fill's price × size has up to 9 (0.938 × 9.496399 = 8.907622262).
    flows = sum((-1 if f.side == "BUY" else 1) * (f.price * f.size).quantize(SIZE, rounding=ROUND_HALF_UP) for f in fills)
    assert round(pnl.as_double(), 6) == round(float(flows), 6)


def _fee_instrument(rate: float, exponent: float, start_ms: int = 1_795_000_000_000) -> Any:
    token = {"asset_id": "123", "market": "0x" + "ab" * 32, "outcome": "Yes", "question": "q", "tick_size": 0.01, "min_order_size": 5}
    fees = {"enabled": True, "taker_base_fee": None, "maker_base_fee": None, "rate": rate, "exponent": exponent, "taker_only": True, "rebate_rate": None}
    at = {**token, "fees": fees, "status": "open", "resolved_at": None, "as_of": start_ms}
    return nautilus.binary_option(at, at, 2, start_ms)


@pytest.mark.parametrize(
    ("rate", "exponent", "side", "expected"),
    [
        (0.02, 1, "TAKER", "0.420000"),  # 100 × 0.02 × 0.30 × 0.70
        (0.02, 2, "TAKER", "0.088200"),  # 100 × 0.02 × 0.21²
        (0.0125, 1, "TAKER", "0.262500"),  # 100 × 0.0125 × 0.21
        (0.02, 1, "MAKER", "0.000000"),  # makers pay nothing
    ],
)
def test_polymarket_fee_model_charges_takers_the_schedule(rate: float, exponent: float, side: str, expected: str) -> None:
    """Fills computed by hand from docs/TIME-MACHINE.md §5's formula, on a real Nautilus order."""
    from nautilus_trader.model.enums import LiquiditySide, OrderSide
    from nautilus_trader.model.objects import Price, Quantity
    from nautilus_trader.test_kit.stubs.events import TestEventStubs
    from nautilus_trader.test_kit.stubs.execution import TestExecStubs

    instrument = _fee_instrument(rate, exponent)
    assert instrument.taker_fee == Decimal(str(rate)) and instrument.price_increment == Price.from_str("0.01")
    order = TestExecStubs.make_accepted_order(instrument=instrument, order_side=OrderSide.BUY, quantity=Quantity.from_int(100), price=Price.from_str("0.30"))
    order.apply(TestEventStubs.order_filled(order=order, instrument=instrument, last_px=Price.from_str("0.30"), liquidity_side=getattr(LiquiditySide, side)))
    commission = nautilus.PolymarketFeeModel().get_commission(order, Quantity.from_int(100), Price.from_str("0.30"), instrument)
    assert str(commission) == f"{expected} pUSD"


@pytest.mark.parametrize(
    ("start_ms", "currency"),
    [
        (1_777_373_999_999, "USDC.e"),  # 2026-04-28 10:59:59.999 UTC: CLOB V1, bridged USDC
        (1_777_374_000_000, "pUSD"),  # 11:00 UTC, the cut-over: Polymarket USD
        (1_795_000_000_000, "pUSD"),
    ],
)
def test_the_instrument_is_priced_in_the_collateral_of_its_start(start_ms: int, currency: str) -> None:
    """docs: Polymarket's CLOB V2 moved the collateral from USDC.e to pUSD on 2026-04-28 at about 11:00 UTC."""
    from nautilus_trader.model.objects import Currency

    instrument = _fee_instrument(0.02, 1, start_ms)
    assert instrument.quote_currency.code == currency and instrument.quote_currency.precision == 6
    assert nautilus.collateral(start_ms) == instrument.quote_currency
    assert Currency.from_str(currency) == instrument.quote_currency


def test_a_size_nautilus_cannot_hold_is_refused_naming_the_token_and_instant() -> None:
    """Stop 34's CI: a 3.8e13-share level (the demo's unbounded walk, since bounded) reached Nautilus's
    ``Quantity``, whose error names neither the token nor the instant. Sizes up to QUANTITY_MAX convert."""
    converter = nautilus._Converter(_fee_instrument(0.02, 1), "123", 1_795_000_000_000)
    ok = converter.changes(mm.Changes(t=1_795_000_000_001, local_t=1_795_000_000_001.5, items=[("bid", 0.3, 3.4e13)], seqs=[7]))
    assert [(d.order.size.as_double(), d.sequence, d.flags) for d in ok] == [(3.4e13, 7, nautilus.F_LAST)]
    too_big = mm.Changes(t=1_795_000_000_002, local_t=1_795_000_000_002.5, items=[("ask", 0.31, 3.8e13)], seqs=[8])
    with pytest.raises(ValueError, match=r"^asset 123 at 1795000000002 ms: size 38000000000000\.0 is larger than NautilusTrader's QUANTITY_MAX"):
        converter.changes(too_big)
