"""Streaming an export body to a file, with a progress line (bytes and rows) on a terminal."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import pyarrow.parquet as pq


@dataclass(frozen=True)
class ExportResult:
    path: Path
    bytes: int
    rows: int


class Progress:
    """``\\r``-rewritten status line on ``stream``; silent unless enabled (default: only on a TTY)."""

    def __init__(self, label: str, enabled: bool | None = None, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.label = label
        self.started = time.monotonic()
        self._last = 0.0

    def update(self, nbytes: int, rows: int | None, final: bool = False) -> None:
        now = time.monotonic()
        if not self.enabled or (not final and now - self._last < 0.2):
            return
        self._last = now
        elapsed = max(now - self.started, 1e-9)
        row_text = f"  {rows:,} rows" if rows is not None else ""
        self.stream.write(f"\r{self.label}: {nbytes / 1e6:,.1f} MB{row_text}  ({nbytes / 1e6 / elapsed:,.1f} MB/s)" + ("\n" if final else ""))
        self.stream.flush()


def write_stream(chunks: Iterable[bytes], path: Path, format: str, progress: Progress) -> ExportResult:
    """Write ``chunks`` to ``path`` through ``path.part``, renamed only once the transfer is complete,
    so an interrupted export never leaves a short file under the final name."""
    part = path.with_name(path.name + ".part")
    nbytes = 0
    newlines = 0
    # CSV and JSONL rows are lines (the CSV has one header line); Parquet's count is in its footer.
    count_lines = format in ("csv", "jsonl")
    try:
        with open(part, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
                nbytes += len(chunk)
                if count_lines:
                    newlines += chunk.count(b"\n")
                progress.update(nbytes, _rows(format, newlines) if count_lines else None)
        os.replace(part, path)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    rows = pq.read_metadata(path).num_rows if format == "parquet" else _rows(format, newlines)
    progress.update(nbytes, rows, final=True)
    return ExportResult(path=path, bytes=nbytes, rows=rows)


def _rows(format: str, newlines: int) -> int:
    return max(newlines - 1, 0) if format == "csv" else newlines
