"""The one-screen summary of a run, and the list of runs.

The numbers come from the extension's functions: chronicle.app_summary()
(pgbench's transactions: tps, latency percentiles by nearest rank),
chronicle.run_summary() (the server's: commits, WAL, I/O, checkpoints) and
chronicle.run_wait_profile() (the sampled waits of active sessions).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import psycopg

from pg_chronicle import text
from pg_chronicle.db import RUN_OF_SERVER, query, query_one, reading_server, run_named


@dataclasses.dataclass
class Wait:
    event: str          # "Class:Event", or "CPU" for an active session not waiting
    backend_type: str
    share: float        # of the run's active samples (database time)
    avg_processes: float | None


@dataclasses.dataclass
class RunSummary:
    label: str
    started: Any
    ended: Any
    seconds: float | None            # of the run's window (after the warm-up)
    meta: dict[str, Any]
    transactions: int                # pgbench's, from its log (0 without one)
    basis: str | None                # 'transactions', 'aggregates' or None
    tps: float | None
    latency_mean_ms: float | None
    latency_p50_ms: float | None
    latency_p99_ms: float | None
    latency_max_ms: float | None
    failures: int
    skipped: int
    server: dict[str, float | None]  # chronicle.run_summary(): metric -> value
    waits: list[Wait]
    wait_coverage: float | None
    warmup_s: float = 0.0            # left out of every number (run_set_warmup)

    @property
    def wal_bytes_total(self) -> float | None:
        rate, secs = self.server.get("wal_bytes_per_s"), self.server.get("seconds")
        return None if rate is None or secs is None else rate * secs

    @property
    def wal_bytes_per_transaction(self) -> float | None:
        """WAL bytes per pgbench transaction when the run has a log, else
        per commit of the server (which counts every session's commits)."""
        total = self.wal_bytes_total
        if self.transactions > 0 and total is not None:
            return total / self.transactions
        return self.server.get("wal_bytes_per_commit")

    @property
    def wal_fpi_per_transaction(self) -> float | None:
        rate, secs = self.server.get("wal_fpi_per_s"), self.server.get("seconds")
        if self.transactions > 0 and rate is not None and secs is not None:
            return rate * secs / self.transactions
        return self.server.get("wal_fpi_per_commit")


def collect(conn: psycopg.Connection[Any], run: str, top_waits: int = 5) -> RunSummary:
    r = query_one(conn,
                  "SELECT r.label, r.started, r.ended, r.meta, "
                  "       extract(epoch FROM w.run_to - w.run_from)::float8 AS seconds, "
                  "       extract(epoch FROM coalesce(to_jsonb(r) ->> 'warmup', '0')::interval)::float8"
                  "         AS warmup_s "
                  "  FROM chronicle.run_window(%(run)s) w, chronicle.run r"
                  " WHERE " + run_named(conn, "%(run)s"),
                  {"run": run})
    assert r is not None
    app = query_one(conn, "SELECT * FROM chronicle.app_summary(%s)", (run,))
    assert app is not None
    server = {row["metric"]: row["value"]
              for row in query(conn, "SELECT metric, value FROM chronicle.run_summary(%s)", (run,))}
    waits_rows = query(conn,
                       "SELECT backend_type, wait_event_type, wait_event, share, avg_processes, coverage "
                       "  FROM chronicle.run_wait_profile(%s) LIMIT %s", (run, top_waits))
    waits = [Wait(event=("CPU" if w["wait_event_type"] in (None, "", "CPU")
                         else f"{w['wait_event_type']}:{w['wait_event']}"),
                  backend_type=w["backend_type"], share=w["share"],
                  avg_processes=w["avg_processes"]) for w in waits_rows]
    coverage = waits_rows[0]["coverage"] if waits_rows else server.get("wait_coverage")
    return RunSummary(
        label=r["label"], started=r["started"], ended=r["ended"], seconds=r["seconds"],
        meta=r["meta"] or {}, transactions=app["transactions"] or 0, basis=app["basis"],
        tps=app["tps"], latency_mean_ms=app["latency_mean_ms"],
        latency_p50_ms=app["latency_p50_ms"], latency_p99_ms=app["latency_p99_ms"],
        latency_max_ms=app["latency_max_ms"], failures=app["failures"] or 0,
        skipped=app["skipped"] or 0, server=server, waits=waits, wait_coverage=coverage,
        warmup_s=r["warmup_s"] or 0.0)


def ms(value: float | None) -> str:
    return "-" if value is None else f"{text.num(value)} ms"


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def format_summary(s: RunSummary) -> str:
    """The summary as printed by bench: one screen, most important first."""
    g = s.server.get
    lines = [f"run {text.visible(s.label)}: {text.when(s.started, '%Y-%m-%d %H:%M:%S%z')} .. "
             + (text.when(s.ended, "%H:%M:%S") if s.ended is not None else "(open)")
             + f" ({text.duration(s.seconds)}"
             + (f" after a warm-up of {text.duration(s.warmup_s)}" if s.warmup_s else "") + ")"]
    if s.transactions > 0:
        lines.append(
            f"  pgbench     {s.transactions:,} transactions, {text.num(s.tps)} tps"
            + (f", {s.failures:,} failed" if s.failures else "")
            + (f", {s.skipped:,} skipped" if s.skipped else ""))
        if s.basis == "transactions":
            lines.append(f"  latency     p50 {ms(s.latency_p50_ms)}, p99 {ms(s.latency_p99_ms)}, "
                         f"max {ms(s.latency_max_ms)} (mean {ms(s.latency_mean_ms)})")
        else:
            lines.append(f"  latency     mean {ms(s.latency_mean_ms)}, max {ms(s.latency_max_ms)} "
                         "(aggregate log: no percentiles)")
    else:
        lines.append("  pgbench     no log loaded")
    # per pgbench transaction with a log, else per commit of the server
    per = "pgbench transaction" if s.transactions > 0 else "server commit"
    lines.append(f"  server      {text.num(g('commits_per_s'))} commits/s, "
                 f"hit ratio {text.pct(g('hit_ratio'))}, {_count(g('checkpoints'))} checkpoints")
    lines.append(f"  WAL         {text.nbytes(s.wal_bytes_per_transaction)} per {per}, "
                 f"{text.num(s.wal_fpi_per_transaction)} full-page images per {per}, "
                 f"{text.nbytes(g('wal_bytes_per_s'), '/s')}")
    lines.append(f"  I/O         read {text.nbytes(g('read_bytes_per_s'), '/s')}, "
                 f"write {text.nbytes(g('write_bytes_per_s'), '/s')} "
                 f"(checkpointer {text.nbytes(g('checkpointer_write_bytes_per_s'), '/s')}, "
                 f"backends {text.nbytes(g('client_write_bytes_per_s'), '/s')}), "
                 f"extend {text.nbytes(g('extend_bytes_per_s'), '/s')}, "
                 f"{text.num(g('fsyncs_per_s'))} fsyncs/s")
    if s.waits:
        lines.append(f"  top waits   (share of database time; {text.num(g('active_processes'))} "
                     f"active sessions on average; sampler coverage {text.pct(s.wait_coverage)})")
        for w in s.waits:
            lines.append(f"    {100 * w.share:5.1f} %  {text.visible(w.event)}  "
                         f"({text.visible(w.backend_type)})")
    else:
        lines.append("  top waits   no active session sampled")
    return "\n".join(lines)


_META_LAST = ("clients", "scale", "pgbench")   # bench's own keys, after the user's
_META_HIDDEN = ("tool", "argv", "connection")   # the comparison shows how runs connected


def _meta_text(meta: dict[str, Any], width: int = 80) -> str:
    """The meta of a run in one line: the user's keys first, then bench's."""
    keys = [k for k in meta if k not in _META_LAST and k not in _META_HIDDEN]
    keys += [k for k in _META_LAST if k in meta]
    out = " ".join(f"{k}={meta[k] if isinstance(meta[k], str) else json.dumps(meta[k])}"
                   for k in keys)
    return out if len(out) <= width else out[:width - 3] + "..."


def runs_table(conn: psycopg.Connection[Any]) -> str:
    rows = query(conn,
                 "SELECT r.label, r.started, r.ended, "
                 "       CASE WHEN isfinite(r.started) AND isfinite(coalesce(r.ended, now())) "
                 "            THEN extract(epoch FROM coalesce(r.ended, now()) - r.started)::float8 "
                 "       END AS seconds, "
                 "       r.meta - 'archive' AS meta, "
                 "       CASE WHEN r.origin = 0 THEN (SELECT s.name FROM chronicle.server() s) "
                 "            ELSE o.server_name END AS server, "
                 "       coalesce(r.server_version, o.server_version) AS version "
                 "  FROM chronicle.run r LEFT JOIN chronicle.origin o ON o.origin_id = r.origin "
                 # --server: that server's runs; else all, each with its server
                 + (" WHERE " + RUN_OF_SERVER if reading_server() is not None else "")
                 + " ORDER BY r.started, r.run_id")
    if not rows:
        return "no run recorded yet (pg-chronicle bench, or chronicle.run_begin())"
    return text.table(
        ["label", "server", "version", "started", "ended", "duration", "meta"],
        [[r["label"], r["server"] or "", r["version"] or "", text.when(r["started"]),
          text.when(r["ended"]) if r["ended"] is not None else "(open)",
          text.duration(r["seconds"]), _meta_text(r["meta"] or {})] for r in rows],
        right=[False, False, False, False, False, True, False])
