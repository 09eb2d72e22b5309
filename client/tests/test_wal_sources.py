"""The WAL panel's table of where a run's WAL came from
(chronicle.run_wal_sources()), built from hand-written rows: no server."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pg_chronicle import panels


def _row(source: str, wal_bytes: int | None, share: float | None, fpi: int | None,
         per_tx: float | None, query: str | None, why: str) -> dict[str, Any]:
    return {"source": source, "statements": None, "calls": None, "wal_records": None,
            "wal_fpi": None if fpi is None else Decimal(fpi),
            "wal_bytes": None if wal_bytes is None else Decimal(wal_bytes), "share": share,
            "wal_bytes_per_s": None, "wal_fpi_per_s": None, "wal_bytes_per_transaction": per_tx,
            "top_queryid": None, "top_query": query, "data_checksums": True,
            "wal_log_hints": False, "full_page_writes": True, "explanation": why}


ROWS = [
    _row("queries", 9_000_000, 0.9, 1000, 688.25, "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
         "Reading wrote WAL: hint bits (FPI_FOR_HINT) and pruning."),
    _row("other statements", 0, 0.0, 0, 0.0, None, "No statement changed data."),
    _row("statements without text", 0, 0.0, 0, 0.0, None, ""),
    _row("not from a statement", 1_000_000, 0.1, 10, 76.5, None, "Commit records, background."),
    _row("total", 10_000_000, 1.0, 1010, 764.75, None, "pg_stat_wal."),
]


def test_wal_sources_table() -> None:
    t = panels.wal_sources_table(ROWS)
    assert t is not None
    assert t["id"] == "wal.sources"
    assert [r[0] for r in t["rows"]] == ["queries", "other statements", "statements without text",
                                         "not from a statement", "total"]
    # bytes as floats, the share in per cent, bytes per transaction rounded
    assert t["rows"][0][1:5] == [9_000_000.0, 90.0, 1000.0, 688.2]
    assert t["rows"][0][5] == "SELECT abalance FROM pgbench_accounts WHERE aid = $1"
    assert t["rows"][1][5] == "" and t["rows"][4][2] == 100.0
    assert t["rows"][0][6] == "Reading wrote WAL: hint bits (FPI_FOR_HINT) and pruning."
    assert t["note"] == ("Over the run's window. data_checksums on, wal_log_hints off, "
                         "full_page_writes on.")


def test_wal_sources_table_without_settings() -> None:
    rows = [dict(r, data_checksums=None, wal_log_hints=None, full_page_writes=None) for r in ROWS]
    t = panels.wal_sources_table(rows)
    assert t is not None and t["note"] == "Over the run's window."
    assert panels.wal_sources_table([]) is None


def test_wal_panel_has_the_table() -> None:
    w = panels.Window(run="r", run_id=1, from_ts=None, to_ts=None, started=None,  # type: ignore[arg-type]
                      ended=None, server_version=None, meta={}, settings={}, environment={})
    p = panels.wal_panel(w, [], ROWS)
    assert [t["id"] for t in p["tables"]] == ["wal.sources"] and p["empty"] is None
    assert panels.wal_panel(w, [])["tables"] == []
