"""Session fixtures: one real service with demo data for the whole run (no mocks anywhere).

TICKHOUSE_TEST_DEMO_TICKS (default 1,000,000) sizes its demo dataset: the largest of its 24 assets
then holds over 100,000 ticks, enough for a cursor walk of several pages.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from service import Service, create_account

import tickhouse

DEMO_TICKS = int(os.environ.get("TICKHOUSE_TEST_DEMO_TICKS", "1000000"))


@dataclass(frozen=True)
class Live:
    url: str
    key: str  # plan unlimited
    free_key: str  # plan free: today's data only
    regen_key: str  # plan free, for the schemathesis run of POST /v1/keys/regenerate, which retires it
    paths: frozenset[str]  # what the running service's /v1/openapi.json lists
    operations: int  # its (path, method) pairs

    def client(self, **kwargs: object) -> tickhouse.Client:
        return tickhouse.Client(self.url, self.key, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    service = Service(tmp_path_factory.mktemp("service") / "data", {"DEMO_TICKS": str(DEMO_TICKS)})
    key = create_account(service.env, "unlimited")
    free_key = create_account(service.env, "free")
    regen_key = create_account(service.env, "free")
    service.start()
    try:
        # The demo dataset loads after the service starts listening; /readyz answers 503 "loading" until all of it is in.
        service.wait_for(lambda: httpx.get(service.url + "/readyz", timeout=10).status_code == 200, 600, "demo data")
        document = httpx.get(service.url + "/v1/openapi.json", timeout=10).json()["paths"]
        operations = sum(1 for item in document.values() for method in item if method in ("get", "post", "put", "patch", "delete"))
        yield Live(service.url, key, free_key, regen_key, frozenset(document), operations)
    finally:
        service.stop()


@pytest.fixture(scope="session")
def client(live: Live) -> Iterator[tickhouse.Client]:
    with live.client() as c:
        yield c


@pytest.fixture(scope="session")
def raw(live: Live) -> Iterator[httpx.Client]:
    """Plain HTTP with the unlimited key: the JSON API's own answers, to compare the client's frames with."""
    # gzip, as the client asks (tickhouse/_http.py): httpx 0.28's zstd decoder, on once zstandard is
    # installed (nautilus_trader pulls it in), fails when a read ends exactly at a zstd frame's end.
    headers = {"Authorization": f"Bearer {live.key}", "Accept-Encoding": "gzip"}
    with httpx.Client(base_url=live.url, headers=headers, timeout=300) as c:
        yield c


@pytest.fixture(scope="session")
def big_asset(client: tickhouse.Client) -> dict[str, object]:
    """The demo asset with the most ticks, with its first and last tick times in ms."""
    top = client.markets(limit=1).iloc[0]
    return {
        "asset_id": top["asset_id"],
        "ticks": int(top["total_ticks"]),
        "first": int(top["first_seen"].value // 1_000_000),
        "last": int(top["last_seen"].value // 1_000_000),
    }


def requires_path(live: Live, path: str) -> None:
    """Endpoints of docs/TIME-MACHINE.md that are built alongside this client: their tests run once the
    live service's OpenAPI lists the path, and are skipped (saying so) before that."""
    if path not in live.paths:
        pytest.skip(f"{path} is not in this service's /v1/openapi.json yet")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The schemathesis runs' summaries (operations, generated cases, failures) at the end of the output."""
    from test_schemathesis import SUMMARIES

    for line in SUMMARIES:
        terminalreporter.write_line(line)
