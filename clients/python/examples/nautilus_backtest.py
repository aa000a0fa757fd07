"""Backtest a Polymarket strategy in NautilusTrader on books as they were (README "Backtesting in NautilusTrader").

    python examples/nautilus_backtest.py [asset_id] [start] [end]

TICKHOUSE_URL (default http://localhost:8080) and TICKHOUSE_API_KEY name the service. Without
arguments it takes the busiest token the service lists and its first six hours. The strategy buys 10
shares at market when the spread is at most two ticks and sells them 50 book updates later, five times
at most; it prints every fill and the realized PnL after Polymarket's taker fees.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pandas as pd
from nautilus_trader.backtest.engine import BacktestEngine, BacktestEngineConfig
from nautilus_trader.config import DataEngineConfig, LoggingConfig, StrategyConfig
from nautilus_trader.model.enums import AccountType, BookType, OmsType, OrderSide
from nautilus_trader.model.identifiers import InstrumentId, Venue
from nautilus_trader.model.objects import Money
from nautilus_trader.trading.strategy import Strategy

import tickhouse
from tickhouse.nautilus import PolymarketFeeModel


class SpreadConfig(StrategyConfig, frozen=True):
    instrument_id: InstrumentId
    max_ticks: int = 2  # buy when the spread is at most this many ticks
    hold_updates: int = 50  # book updates to hold before selling
    round_trips: int = 5


@dataclass(frozen=True)
class Fill:
    ts: int  # ns, the backtest clock (receive time)
    side: str
    price: Decimal
    size: Decimal


class SpreadBuyer(Strategy):
    def __init__(self, config: SpreadConfig) -> None:
        super().__init__(config)
        self.fills: list[Fill] = []
        self.held = -1  # book updates since the buy, -1 when flat
        self.trips = 0

    def on_start(self) -> None:
        self.instrument = self.cache.instrument(self.config.instrument_id)
        self.subscribe_order_book_deltas(self.config.instrument_id, book_type=BookType.L2_MBP)

    def on_order_book_deltas(self, deltas: Any) -> None:
        book = self.cache.order_book(self.config.instrument_id)
        bid, ask = book.best_bid_price(), book.best_ask_price()
        if bid is None or ask is None or self.trips >= self.config.round_trips or self.cache.orders_open_count() != 0:
            return
        size = self.instrument.make_qty(max(10, float(self.instrument.min_quantity or 0)))
        if self.held < 0 and ask - bid <= self.instrument.price_increment * self.config.max_ticks:
            self.submit_order(self.order_factory.market(self.config.instrument_id, OrderSide.BUY, size))
            self.held = 0
        elif self.held >= 0:
            self.held += 1
            if self.held >= self.config.hold_updates:
                self.submit_order(self.order_factory.market(self.config.instrument_id, OrderSide.SELL, size))
                self.held, self.trips = -1, self.trips + 1

    def on_order_filled(self, event: Any) -> None:
        self.fills.append(Fill(event.ts_event, event.order_side.name, event.last_px.as_decimal(), event.last_qty.as_decimal()))

    def on_stop(self) -> None:
        self.close_all_positions(self.config.instrument_id)


def run(client: tickhouse.Client, asset_id: str, start: Any, end: Any) -> tuple[list[Fill], Money]:
    """The backtest over ``[start, end]``: the strategy's fills and the account's change after fees."""
    with client.market_channel(asset_id, start, end) as channel:
        data = channel.to_nautilus()
    instrument = data.instruments[0]
    engine = BacktestEngine(BacktestEngineConfig(logging=LoggingConfig(log_level="ERROR"), data_engine=DataEngineConfig(buffer_deltas=True)))
    venue = Venue("POLYMARKET")
    cash = instrument.quote_currency  # Polymarket's collateral then: USDC.e before CLOB V2 (2026-04-28), pUSD after
    start_balance = Money(1_000, cash)
    fees = PolymarketFeeModel()  # the token's schedule, from the instrument
    engine.add_venue(venue, OmsType.NETTING, AccountType.CASH, [start_balance], base_currency=cash, book_type=BookType.L2_MBP, fee_model=fees)
    engine.add_instrument(instrument)
    engine.add_data(data.deltas)
    engine.add_data(data.trades)
    strategy = SpreadBuyer(SpreadConfig(instrument_id=instrument.id))
    engine.add_strategy(strategy)
    engine.run()
    balance = engine.cache.account_for_venue(venue).balance_total(cash)
    engine.dispose()
    return strategy.fills, Money(balance.as_double() - start_balance.as_double(), cash)


def main() -> None:
    client = tickhouse.Client(os.environ.get("TICKHOUSE_URL", "http://localhost:8080"), os.environ.get("TICKHOUSE_API_KEY"))
    if len(sys.argv) > 1:
        asset_id, start, end = sys.argv[1], sys.argv[2], sys.argv[3]
    else:
        top = client.markets(limit=1).iloc[0]
        asset_id, start = top["asset_id"], top["first_seen"]
        end = start + pd.Timedelta(hours=6)
    fills, pnl = run(client, asset_id, start, end)
    for f in fills:
        print(f"{pd.Timestamp(f.ts, unit='ns', tz='UTC')}  {f.side:<4} {f.size} @ {f.price}")
    print(f"{len(fills)} fills, PnL after fees: {pnl}")


if __name__ == "__main__":
    main()
