"""The replay WebSocket (docs/TIME-MACHINE.md §1) as an iterator of Polymarket market-channel events."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import cast
from urllib.parse import urlencode

from ._http import Transport
from ._types import ReplayEvent
from .errors import ConnectionFailed, ConnectionLost, ReplayClosed, error_from_response

COMPLETE = (1000, "replay complete")


def replay_events(transport: Transport, assets: Sequence[str], start_ms: int, end_ms: int, speed: float | str) -> Iterator[ReplayEvent]:
    """Opens the replay, subscribes ``assets`` and yields every event until the service's ``replay complete``."""
    from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
    from websockets.sync.client import connect

    query = urlencode({"from": start_ms, "to": end_ms, "speed": speed})
    url = transport.base_url.replace("http", "ws", 1) + "/v1/replay/market?" + query
    try:
        ws = connect(url, additional_headers=transport.auth_headers(), max_size=None, open_timeout=30)
    except InvalidStatus as refused:
        response = refused.response
        raise error_from_response(response.status_code, bytes(response.body or b""), dict(response.headers.raw_items())) from None
    except (OSError, TimeoutError, InvalidHandshake) as err:
        raise ConnectionFailed(f"could not open the replay at {transport.base_url}: {err}") from err
    with ws:
        ws.send(json.dumps({"assets_ids": list(assets), "type": "market"}))
        try:
            for frame in ws:
                message = json.loads(frame)
                # The initial books arrive as one array; events one by one.
                if isinstance(message, list):
                    yield from cast("list[ReplayEvent]", message)
                else:
                    yield cast(ReplayEvent, message)
        except ConnectionClosed as closed:
            if closed.rcvd is None:
                raise ConnectionLost(f"the replay connection to {transport.base_url} ended without a close frame") from closed
            raise ReplayClosed(closed.rcvd.code, closed.rcvd.reason) from None
        received = ws.close_code, ws.close_reason
        if received != COMPLETE:
            raise ReplayClosed(received[0], received[1] or "")
