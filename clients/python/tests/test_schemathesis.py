"""Schemathesis against the live service's /v1/openapi.json, over every operation, with a key.

Two runs, because POST /v1/keys/regenerate retires the key the others authenticate with: every
operation but that one first, then that one alone (with a key of its own). A fixed seed keeps the
run reproducible; SCHEMATHESIS_SEED and SCHEMATHESIS_MAX_EXAMPLES change it (about a minute as set).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import Live

CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"
REGENERATE = "/v1/keys/regenerate"
SUMMARIES: list[str] = []  # printed at the end of the pytest run by conftest.pytest_terminal_summary


def schemathesis(live: Live, key: str, workdir: Path, *filters: str) -> str:
    # One worker: on Python 3.11, concurrent workers hit a CPython AST thread-safety bug inside Hypothesis.
    command = [
        sys.executable, "-m", "schemathesis.cli", "run", f"{live.url}/v1/openapi.json",
        "--header", f"Authorization: Bearer {key}",
        "--checks", CHECKS,
        "--max-examples", os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "25"),
        "--seed", os.environ.get("SCHEMATHESIS_SEED", "1"),
        "--workers", "1",
        "--request-timeout", "60",
        *filters,
    ]  # fmt: skip
    out = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=900, env={**os.environ, "NO_COLOR": "1"})
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-20_000:]
    return text


def summary(label: str, text: str) -> str:
    tested = re.search(r"Tested: (\d+)", text)
    cases = re.search(r"Test cases:\s*\n\s*(.+)", text)
    final = [line for line in text.splitlines() if line.startswith("=") and " in " in line]
    operations = tested.group(1) if tested else "?"
    generated = cases.group(1).strip() if cases else "?"
    return f"schemathesis {label}: {operations} operations tested; {generated}; {final[-1].strip('= ') if final else ''}"


def test_every_operation_conforms_to_the_openapi_document(live: Live, tmp_path: Path) -> None:
    text = schemathesis(live, live.key, tmp_path, "--exclude-path", REGENERATE)
    tested = re.search(r"Tested: (\d+)", text)
    assert tested and int(tested.group(1)) == live.operations - 1  # every operation, none left untested
    SUMMARIES.append(summary(f"(all but {REGENERATE})", text))


def test_key_regeneration_conforms_to_the_openapi_document(live: Live, tmp_path: Path) -> None:
    text = schemathesis(live, live.regen_key, tmp_path, "--include-path", REGENERATE)
    SUMMARIES.append(summary(f"({REGENERATE})", text))
