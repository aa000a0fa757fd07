"""ticks() and export() against the live service: every path gives the frame the JSON API answers."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pandas.testing as pdt
import polars as pl
import pyarrow as pa
import pytest
from reference import expected_frame, json_walk

import tickhouse


@pytest.fixture(scope="module")
def walk(raw: httpx.Client, big_asset: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    params = {"asset_id": big_asset["asset_id"], "start": big_asset["first"], "end": big_asset["last"]}
    return params, json_walk(raw, params, 30_000)


def test_cursor_walk_of_over_100000_ticks_equals_the_json_api(client: tickhouse.Client, walk: Any, big_asset: dict[str, Any]) -> None:
    params, rows = walk
    assert len(rows) == big_asset["ticks"] >= 100_000
    frame = client.ticks(params["asset_id"], params["start"], params["end"], via="json")
    pdt.assert_frame_equal(frame, expected_frame(rows), check_exact=True)
    assert str(frame["t"].dtype) == "datetime64[ms, UTC]"
    assert frame["t"].is_monotonic_increasing


@pytest.mark.parametrize("via", ["auto", "parquet", "csv", "jsonl"])
def test_every_path_gives_the_same_frame(client: tickhouse.Client, walk: Any, via: str) -> None:
    params, rows = walk
    frame = client.ticks(params["asset_id"], params["start"], params["end"], via=via)  # type: ignore[arg-type]
    pdt.assert_frame_equal(frame, expected_frame(rows), check_exact=True)


def test_auto_uses_one_json_page_for_a_small_range_and_the_parquet_export_for_a_large_one(client: tickhouse.Client, raw: httpx.Client, walk: Any) -> None:
    params, rows = walk
    # Each data request counts once a day (docs/API.md §2), so requests_today tells how the client fetched.
    small_end = rows[999]["t"]
    small = json_walk(raw, {**params, "end": small_end}, 100_000)
    before = client.me()["requests_today"]
    pdt.assert_frame_equal(client.ticks(params["asset_id"], params["start"], small_end), expected_frame(small), check_exact=True)
    assert client.me()["requests_today"] == before + 1  # one JSON page
    client.ticks(params["asset_id"], params["start"], params["end"])
    assert client.me()["requests_today"] == before + 3  # the probe page, then one export
    client.ticks(params["asset_id"], params["start"], params["end"], via="json")
    assert client.me()["requests_today"] == before + 3 + -(-len(rows) // 100_000)  # pages of 100,000


def test_event_type_filter(client: tickhouse.Client, raw: httpx.Client, walk: Any) -> None:
    params, _ = walk
    rows = json_walk(raw, {**params, "event_type": "book"}, 100_000)
    assert rows and {r["event"] for r in rows} == {"book"}
    for via in ("json", "parquet"):
        pdt.assert_frame_equal(client.ticks(params["asset_id"], params["start"], params["end"], "book", via=via), expected_frame(rows), check_exact=True)  # type: ignore[arg-type]


def test_an_empty_range_is_an_empty_frame_of_the_same_dtypes(client: tickhouse.Client, walk: Any) -> None:
    params, rows = walk
    for via in ("auto", "json", "parquet", "csv", "jsonl"):
        frame = client.ticks(params["asset_id"], params["start"] - 10_000, params["start"] - 1, via=via)  # type: ignore[arg-type]
        pdt.assert_frame_equal(frame, expected_frame([]).astype(expected_frame(rows[:1]).dtypes.to_dict()), check_exact=True)


def test_times_as_ms_datetime_timestamp_or_iso_text(client: tickhouse.Client, raw: httpx.Client, walk: Any) -> None:
    params, rows = walk
    start, end = rows[10]["t"], rows[500]["t"]
    expected = expected_frame(json_walk(raw, {**params, "start": start, "end": end}, 100_000))
    as_dt = lambda ms: datetime.fromtimestamp(ms / 1000, timezone.utc)  # noqa: E731
    forms = [
        (start, end),
        (as_dt(start), as_dt(end)),
        (as_dt(start).replace(tzinfo=None), as_dt(end).replace(tzinfo=None)),  # naive = UTC
        (pd.Timestamp(start, unit="ms", tz="UTC"), pd.Timestamp(end, unit="ms", tz="UTC")),
        (as_dt(start).isoformat().replace("+00:00", "Z"), as_dt(end).astimezone().isoformat()),
        (as_dt(start).replace(tzinfo=None).isoformat(timespec="milliseconds"), pd.Timestamp(end, unit="ms").tz_localize("UTC").tz_convert("America/New_York")),
    ]
    for s, e in forms:
        pdt.assert_frame_equal(client.ticks(params["asset_id"], s, e), expected, check_exact=True)


def test_polars_and_arrow_outputs(client: tickhouse.Client, walk: Any) -> None:
    params, rows = walk
    columns = {
        "t": [r["t"] for r in rows],
        **{name: [r[name] for r in rows] for name in ("event", "side", "best_bid", "best_ask", "price", "size")},
    }
    expected_pl = pl.DataFrame(
        columns,
        schema={"t": pl.Int64, "event": pl.String, "side": pl.String, "best_bid": pl.Float64, "best_ask": pl.Float64, "price": pl.Float64, "size": pl.Float64},
    ).with_columns(pl.col("t").cast(pl.Datetime("ms", "UTC")))
    for via in ("json", "parquet"):
        frame = client.ticks(params["asset_id"], params["start"], params["end"], as_="polars", via=via)  # type: ignore[arg-type]
        assert isinstance(frame, pl.DataFrame)
        assert frame.equals(expected_pl) and frame.schema == expected_pl.schema
        table = client.ticks(params["asset_id"], params["start"], params["end"], as_="arrow", via=via)  # type: ignore[arg-type]
        assert isinstance(table, pa.Table)
        assert table.schema.field("t").type == pa.timestamp("ms", tz="UTC")
        assert table.to_pylist() == expected_pl.to_arrow().to_pylist()


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_export_streams_to_a_file_that_reads_back_as_the_same_frame(
    client: tickhouse.Client, walk: Any, tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    params, rows = walk
    target = tmp_path / f"ticks.{fmt}"
    result = client.export(params["asset_id"], params["start"], params["end"], target, format=fmt)  # type: ignore[arg-type]
    assert result == tickhouse.ExportResult(path=target, bytes=target.stat().st_size, rows=len(rows))
    assert list(tmp_path.iterdir()) == [target]  # no .part left behind
    pdt.assert_frame_equal(client.read_export(target), expected_frame(rows), check_exact=True)
    assert capsys.readouterr().err == ""  # stderr is not a terminal here: no progress line


def test_export_progress_line_when_asked(client: tickhouse.Client, walk: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    params, rows = walk
    client.export(params["asset_id"], params["start"], params["end"], tmp_path / "t.csv", progress=True)
    last = capsys.readouterr().err.split("\r")[-1]
    assert last.startswith("t.csv: ") and f"  {len(rows):,} rows  (" in last and last.endswith("MB/s)\n")


@pytest.mark.parametrize("via", ["auto", "json", "parquet", "csv", "jsonl"])
def test_fields_all_appends_sides_receive_time_and_arrival_order(client: tickhouse.Client, raw: httpx.Client, walk: Any, via: str) -> None:
    params, _ = walk
    end = params["start"] + 3_600_000
    rows = json_walk(raw, {**params, "end": end, "fields": "all"}, 100_000)
    assert rows and list(rows[0])[7:] == ["book_side", "taker_side", "local_t", "seq"]
    expected = expected_frame(rows).assign(
        book_side=pd.Series([r["book_side"] for r in rows]),
        taker_side=pd.Series([r["taker_side"] for r in rows]),
        # local_t: Unix ms with up to 3 decimals → µs.
        local_t=pd.Series(pd.to_datetime([round(r["local_t"] * 1000) for r in rows], unit="us", utc=True), dtype="datetime64[us, UTC]"),
        seq=pd.Series([r["seq"] for r in rows], dtype="uint64"),
    )
    frame = client.ticks(params["asset_id"], params["start"], end, via=via, fields="all")  # type: ignore[arg-type]
    pdt.assert_frame_equal(frame, expected, check_exact=True)
    assert set(frame["book_side"]) <= {"bid", "ask", ""} and set(frame["taker_side"]) <= {"buy", "sell", ""}
    assert (frame["book_side"] != "").sum() == (frame["event"] == "price_change").sum()
    # A subset comes back in the service's order, whatever order it is named in.
    assert list(client.ticks(params["asset_id"], params["start"], end, via=via, fields=["seq", "book_side"]).columns)[7:] == ["book_side", "seq"]  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fields must name"):
        client.ticks(params["asset_id"], params["start"], end, fields="side")


def test_instrument_is_the_json_api_answer(client: tickhouse.Client, raw: httpx.Client, walk: Any) -> None:
    params, _ = walk
    answer = raw.get("/v1/instruments", params={"asset_id": params["asset_id"], "timestamp": params["start"]}).raise_for_status().json()["data"]
    assert client.instrument(params["asset_id"], params["start"]) == answer
    assert answer["as_of"] == params["start"] and answer["status"] in ("open", "resolved")
