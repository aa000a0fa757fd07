"""A real tickhouse service for the tests: the repository's `src/main.ts` on a temporary DATA_DIR and
a free port, with accounts created beforehand by `scripts/admin.ts` (the embedded account store
belongs to one process at a time, so keys are made before the service takes it)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[3]
TSX = REPO / "node_modules" / ".bin" / "tsx"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def create_account(env: dict[str, str], plan: str) -> str:
    """A new account on ``plan`` through the operator command; returns its key."""
    out = subprocess.run([str(TSX), "scripts/admin.ts", "create-account", "--plan", plan], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"admin create-account failed: {out.stderr}")
    return json.loads(out.stdout)["api_key"]


@dataclass
class Service:
    data_dir: Path
    env_extra: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "DATA_DIR": str(self.data_dir), "PORT": str(self.port), "HOST": "127.0.0.1", "LOG_LEVEL": "warn", **self.env_extra}

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / f"service-{self.port}.log"

    def start(self) -> None:
        # Open for as long as the service runs: its output goes there.
        log = open(self.log_path, "wb")  # noqa: SIM115
        self.process = subprocess.Popen([str(TSX), "src/main.ts"], cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.wait_for(lambda: httpx.get(self.url + "/healthz", timeout=2).status_code == 200, 120, "/healthz")

    def wait_for(self, ready: Any, seconds: float, what: str) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"service exited ({self.process.returncode}):\n{self.log_path.read_text()[-3000:]}")
            try:
                if ready():
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        raise RuntimeError(f"service not ready ({what}) within {seconds}s:\n{self.log_path.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(5)


@dataclass
class RedisServer:
    """A real redis-server on a free port in ``directory`` (no persistence)."""

    directory: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @staticmethod
    def available() -> bool:
        return shutil.which("redis-server") is not None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(self.directory)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
