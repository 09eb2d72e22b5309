"""pg-chronicle bench: pgbench as a recorded run.

    silence until a snapshot  ->  run_begin(label, meta)
    ->  pgbench ARGS -l --log-prefix=TMP/pgbench_log
    ->  silence until the collector's first snapshot after pgbench
    ->  run_end(label, after => when pgbench ended): the run ends AT that snapshot
    ->  the logs streamed into chronicle.load_pgbench_lines() (COPY FROM STDIN:
        the server need not see the client's files)  ->  summary

The run's window holds pgbench and nothing else: a snapshot interval counts
in a run when its end lies in (started, ended], and pg_stat_statements, the
WAL and I/O counters count whatever ends before the snapshot that reads
them.  So from pgbench's end until the first snapshot after it the client
sends no statement at all (it sleeps for one snapshot interval and a half;
a poll would be a statement), then has run_end() end the run at that
snapshot, in the past, and only then loads the log (its WAL and statements
belong to the next intervals, outside the run).  The time pgbench ended is
taken in the server's clock without comparing two clocks: the server's
clock_timestamp() read by the first statement after the silence, less the
time the client counted (monotonic) since pgbench exited.  Before
run_begin the client is silent as long, so that its own questions and
whatever came before (the log load of a bench run just before) are in a
snapshot before the run's first interval: the window starts inside an
interval, which holds run_begin itself.

pgbench connects where the client does unless its own arguments say
otherwise: the conninfo given with -d is passed on as PG* variables.
pgbench's stdout and stderr are the terminal's (its -P progress shows).

Ctrl-C (SIGINT): pgbench gets SIGINT too (the terminal sends it to the
whole foreground process group; it is forwarded when only pg-chronicle got
it), the run is ended, the logs written so far are loaded (a line cut off by
the signal is dropped), the run is summarised, and the exit code is 130.
A Ctrl-C while waiting for the snapshot ends the run without waiting more.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from types import FrameType
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from pg_chronicle import summary, trials
from pg_chronicle.db import EXIT_ERROR, EXIT_INTERRUPTED, ClientError, connect, query_one, translated
from pg_chronicle.text import echo

LOG_PREFIX = "pgbench_log"

# conninfo keywords pgbench reads from the environment
_ENV_OF = {"host": "PGHOST", "hostaddr": "PGHOSTADDR", "port": "PGPORT", "dbname": "PGDATABASE",
           "user": "PGUSER", "password": "PGPASSWORD", "passfile": "PGPASSFILE",
           "sslmode": "PGSSLMODE", "sslrootcert": "PGSSLROOTCERT", "sslcert": "PGSSLCERT",
           "sslkey": "PGSSLKEY", "service": "PGSERVICE", "options": "PGOPTIONS",
           "connect_timeout": "PGCONNECT_TIMEOUT", "gssencmode": "PGGSSENCMODE",
           "target_session_attrs": "PGTARGETSESSIONATTRS"}


def pgbench_env(conninfo: str | None) -> dict[str, str]:
    """The environment of pgbench: ours, plus the connection given with -d
    as PG* variables (pgbench's own options still win)."""
    env = dict(os.environ)
    if conninfo:
        try:
            params = psycopg.conninfo.conninfo_to_dict(conninfo)
        except psycopg.ProgrammingError as exc:
            raise ClientError(f"invalid conninfo: {exc}") from exc
        for key, value in params.items():
            if key in _ENV_OF and value is not None:
                env[_ENV_OF[key]] = str(value)
    return env


def find_pgbench(explicit: str | None) -> str:
    cand = explicit or os.environ.get("PGBENCH") or shutil.which("pgbench")
    if not cand:
        raise ClientError("pgbench not found: put it in PATH, or give --pgbench PATH "
                          "(it is in the bin directory of PostgreSQL, pg_config --bindir)")
    if os.sep in cand and not os.access(cand, os.X_OK):
        raise ClientError(f"pgbench {cand!r} is not an executable file")
    return cand


_CLIENT_OPT = re.compile(r"^(?:-c|--client=?)(\d*)$")


def client_count(pgbench_args: list[str]) -> int:
    """pgbench's -c / --client (1 when not given; the last one wins)."""
    n = 1
    for i, a in enumerate(pgbench_args):
        m = _CLIENT_OPT.match(a)
        if m:
            val = m.group(1) or (pgbench_args[i + 1] if i + 1 < len(pgbench_args) else "")
            if val.isdigit():
                n = int(val)
    return n


def check_args(pgbench_args: list[str]) -> None:
    for a in pgbench_args:
        if a.startswith("--log-prefix"):
            raise ClientError("bench sets pgbench's --log-prefix itself; to keep the logs, "
                              "give bench --keep-logs DIR")
        if a in ("-i", "--initialize") or (a.startswith("-i") and len(a) > 2 and a[1] == "i"):
            raise ClientError("bench records a benchmark run; initialise with pgbench -i first")


def scale(conn: psycopg.Connection[Any]) -> int | None:
    """pgbench's scale: the rows of pgbench_branches, where the client
    connects (None without that table)."""
    row = query_one(conn, "SELECT to_regclass('pgbench_branches') IS NOT NULL AS e")
    if row is None or not row["e"]:
        return None
    n = query_one(conn, "SELECT count(*) AS n FROM pgbench_branches")
    return None if n is None else int(n["n"])


def default_label() -> str:
    return "bench-" + datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S")


def log_files(logdir: pathlib.Path) -> list[pathlib.Path]:
    """pgbench's files: <prefix>.<pid> and <prefix>.<pid>.<thread>."""
    pat = re.compile(re.escape(LOG_PREFIX) + r"\.\d+(\.\d+)?$")
    return sorted(p for p in logdir.iterdir() if p.is_file() and pat.match(p.name))


def _complete_lines(path: pathlib.Path) -> Iterable[bytes]:
    """The whole lines of a file: a last line without its newline (pgbench
    stopped while writing it) is left out."""
    with open(path, "rb") as f:
        data = f.read()
    if not data:
        return []
    end = data.rfind(b"\n")
    return data[:end + 1].splitlines() if end >= 0 else []


def _copy_escape(line: bytes) -> bytes:
    # COPY's text format: one column; backslash, tab and CR are special
    return line.replace(b"\\", b"\\\\").replace(b"\t", b"\\t").replace(b"\r", b"\\r")


def load_logs(conn: psycopg.Connection[Any], label: str,
              files: list[pathlib.Path]) -> list[dict[str, Any]]:
    """Streams the files through COPY into the session's staging table and
    parses them with chronicle.load_pgbench_lines(), in one transaction (a
    malformed line leaves nothing behind).  Files without a whole line are
    skipped.  Returns load_pgbench_lines()'s rows (file, log_format, lines)."""
    chunks = [(p, list(_complete_lines(p))) for p in files]
    chunks = [(p, lines) for p, lines in chunks if lines]
    if not chunks:
        return []
    with translated(), conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT chronicle.pgbench_staging()")
        for path, lines in chunks:
            cur.execute(sql.SQL("ALTER TABLE pg_temp.chronicle_pgbench_lines "
                                "ALTER COLUMN file SET DEFAULT {}").format(sql.Literal(path.name)))
            with cur.copy("COPY pg_temp.chronicle_pgbench_lines (line) FROM STDIN") as copy:
                buf: list[bytes] = []
                for line in lines:
                    buf.append(_copy_escape(line))
                    if len(buf) >= 10000:
                        copy.write(b"\n".join(buf) + b"\n")
                        buf = []
                if buf:
                    copy.write(b"\n".join(buf) + b"\n")
        cur.execute("SELECT file, log_format, lines FROM chronicle.load_pgbench_lines(%s)", (label,))
        rows = [dict(zip(("file", "log_format", "lines"), r, strict=True)) for r in cur.fetchall()]
        cur.execute("TRUNCATE pg_temp.chronicle_pgbench_lines")
    return rows


# pgbench's backends report their last statistics (WAL, I/O) as they exit,
# right after pgbench's last transaction: the run ends at the first snapshot
# after pgbench's exit plus this margin (seconds).
EXIT_MARGIN = 0.1


def snapshot_interval(conn: psycopg.Connection[Any]) -> float:
    """chronicle.snapshot_interval in seconds (1 when this session does not
    know the setting: the library is not loaded in it)."""
    row = query_one(conn, "SELECT coalesce(extract(epoch FROM "
                          "current_setting('chronicle.snapshot_interval', true)::interval), 1)::float8 AS s")
    return float(row["s"]) if row and row["s"] else 1.0


def quiet_time(interval: float) -> float:
    """How long the client stays silent after pgbench (and EXIT_MARGIN): the
    first snapshot after pgbench is due within one interval, and takes some
    time to read the counters and commit: half an interval more, at least
    0.25 s, at most 5 s."""
    return interval + min(max(interval / 2, 0.25), 5.0)


def _wait_until(t: float, handler: _Interrupt) -> None:
    """Sleeps until time.monotonic() reaches t, or a Ctrl-C (handler.cut)."""
    while not handler.cut:
        left = t - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.1))


def end_run(conn: psycopg.Connection[Any], label: str, pgbench_end: float, interval: float,
            handler: _Interrupt) -> tuple[Any, bool]:
    """Ends the run at the collector's first snapshot after pgbench ended
    (pgbench_end: time.monotonic() then), sending nothing to the server
    before that snapshot was taken.  Returns (ended, at_snapshot): False
    when no snapshot came (collector stopped, or a Ctrl-C cut the wait
    short) and the run ended at the time of run_end() instead."""
    quiet_until = pgbench_end + EXIT_MARGIN + quiet_time(interval)
    if quiet_until - time.monotonic() > 2:
        echo(f"pg-chronicle: waiting {quiet_until - time.monotonic():.0f} s for the collector's "
             f"next snapshot (chronicle.snapshot_interval = {interval:g} s) to end the run; "
             "Ctrl-C ends it now", file=sys.stderr, flush=True)
    handler.waiting = True
    _wait_until(quiet_until, handler)
    # The first statement since pgbench.  pgbench's end in the server's
    # clock: its clock now less the time counted here since; an upper bound
    # (the server read its clock after `sent`), capped at now.
    sent = time.monotonic()
    row = query_one(conn, "SELECT clock_timestamp() AS now")
    assert row is not None
    now = row["now"]
    after = min(now, now - datetime.timedelta(seconds=sent - pgbench_end - EXIT_MARGIN))
    # Normally that snapshot is there already; a collector behind its
    # schedule gets until three intervals after pgbench.
    deadline = max(pgbench_end + 3 * interval + 1, quiet_until + 1)
    while not handler.cut:
        r = query_one(conn, "SELECT EXISTS (SELECT FROM chronicle.snapshot s WHERE s.ts > %s) AS e",
                      (after,))
        if (r is not None and r["e"]) or time.monotonic() > deadline:
            break
        time.sleep(min(0.1, interval / 4))
    fallback: list[str] = []

    def notice(diag: psycopg.errors.Diagnostic) -> None:
        if (diag.message_primary or "").startswith("chronicle.run_end: no snapshot"):
            fallback.append(diag.message_primary or "")

    conn.add_notice_handler(notice)
    try:
        with translated():
            r2 = conn.execute("SELECT ended FROM chronicle.run_end(%s, after => %s)",
                              (label, after)).fetchone()
    finally:
        conn.remove_notice_handler(notice)
    assert r2 is not None
    return r2[0], not fallback


class _Interrupt:
    """SIGINT while pgbench runs: remembered, and passed on to pgbench.
    While waiting for the snapshot that ends the run: cuts the wait short."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.hit = False
        self.waiting = False
        self.cut = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.hit = True
        if self.waiting:
            self.cut = True
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGINT)


def _pgbench(conn: psycopg.Connection[Any], cmd: list[str], env: dict[str, str],
             handler: _Interrupt, label: str, pgbench: str) -> tuple[int, float]:
    """Runs pgbench to its end; its exit code and time.monotonic() then.
    Nothing is sent to the server after pgbench started (see end_run)."""
    try:
        handler.proc = subprocess.Popen(cmd, env=env)
    except OSError as exc:
        # pgbench did not start: forget the run it would have made
        with translated():
            conn.execute("SELECT chronicle.run_end(%s)", (label,))
            conn.execute("SELECT chronicle.run_delete(%s)", (label,))
        raise ClientError(f"cannot run {pgbench}: {exc.strerror}") from exc
    rc = handler.proc.wait()
    return rc, time.monotonic()


def _whole_lines(files: list[pathlib.Path]) -> int:
    n = 0
    for p in files:
        n += sum(1 for _ in _complete_lines(p))
    return n


def _logdir(keep_logs: pathlib.Path | None) -> tuple[pathlib.Path, tempfile.TemporaryDirectory[str] | None]:
    """Where pgbench writes its logs: keep_logs (made, and refused when it
    holds pgbench logs already), else a temporary folder (removed after)."""
    if keep_logs is None:
        tmp = tempfile.TemporaryDirectory(prefix="pg-chronicle-")
        return pathlib.Path(tmp.name), tmp
    keep_logs.mkdir(parents=True, exist_ok=True)
    stale = log_files(keep_logs)
    if stale:
        raise ClientError(f"{keep_logs} has pgbench logs already ({stale[0].name}...): "
                          "give --keep-logs an empty folder")
    return keep_logs, None


def connection(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """How the client reached the server (pgbench connects the same way):
    host or socket folder, port, TLS in use.  Two runs that differ only in
    the network path differ here, where no setting does."""
    host = conn.info.host
    return {"host": host, "port": conn.info.port, "unix_socket": host.startswith("/"),
            "tls": bool(conn.pgconn.ssl_in_use)}


def main(conninfo: str | None, args: argparse.Namespace, pgbench_args: list[str],
         extra_meta: dict[str, Any] | None = None) -> int:
    """Records the run (or the trials) args and pgbench_args say; its exit
    code.  extra_meta: keys put into the run's meta last, over bench's own
    and --meta's (pg-chronicle sweep's tool, sweep, sweep_var, sweep_value)."""
    check_args(pgbench_args)
    n: int | None = getattr(args, "trials", None)
    if n is not None and n < 1:
        raise ClientError(f"--trials wants 1 or more, got {n}")
    pgbench = find_pgbench(args.pgbench)
    env = pgbench_env(conninfo)
    label: str = args.label or default_label()
    labels = [trials.trial_label(label, k) for k in range(1, n + 1)] if n is not None else [label]
    with connect(conninfo) as conn:
        trials.check_new_labels(conn, label, trials=n is not None)
        meta: dict[str, Any] = {
            "tool": "pg-chronicle bench",
            "pgbench": shlex.join(["pgbench", *pgbench_args]),
            "argv": pgbench_args,
            "clients": client_count(pgbench_args),
        }
        sc = scale(conn)
        if sc is not None:
            meta["scale"] = sc
        meta["connection"] = connection(conn)
        for k, v in args.meta:
            meta[k] = v
        meta.update(extra_meta or {})
    archive_dir: pathlib.Path | None = getattr(args, "archive", None)
    archives = [archive_path(archive_dir, lab) for lab in labels] if archive_dir is not None else []
    for a in archives:           # every archive's place checked before the first run
        _archive_place(a)
    keep: list[pathlib.Path | None] = [None] * len(labels)
    if args.keep_logs is not None:
        keep = [args.keep_logs / str(k) for k in range(1, len(labels) + 1)] \
            if n is not None else [args.keep_logs]
        for d in keep:          # every folder checked before the first run
            assert d is not None
            _logdir(d)
    rc = 0
    recorded = 0
    for i, run_label in enumerate(labels):
        logdir, tmp = _logdir(keep[i])
        try:
            # a session of its own for every run: run_begin reads the
            # settings the session shows (plpgsql's appear once a function
            # in PL/pgSQL ran), alike for every trial
            with connect(conninfo) as conn:
                rc = _run(conn, run_label, meta, pgbench, pgbench_args, env, logdir,
                          getattr(args, "warmup", None))
            # the run has ended (also after a Ctrl-C or a failed pgbench):
            # its archive, so that the cluster can be thrown away
            if archives:
                write_archive(conninfo, run_label, archives[i])
        except ClientError as exc:
            if exc.exit_code != EXIT_INTERRUPTED or recorded == 0:
                raise
            # Ctrl-C before a later trial began: the trials recorded stand
            echo(f"pg-chronicle: {exc.message}: trial {run_label} not recorded", file=sys.stderr)
            rc = EXIT_INTERRUPTED
            break
        finally:
            if tmp is not None:
                tmp.cleanup()
        recorded += 1
        if rc != 0:
            if i + 1 < len(labels):
                echo(f"pg-chronicle: trials after {run_label} not recorded", file=sys.stderr)
            break
    if n is not None:
        with connect(conninfo) as conn:
            ts = trials.load(conn, trials.Config(label, labels[:recorded], trials=True))
            echo("\n" + trials.config_text(ts), flush=True)
    if args.report is not None:
        from pg_chronicle.report import write_checked
        path = write_checked(conninfo, label, args.vs, None, None, args.report)
        echo(f"report: {path}")
    return rc


def archive_path(folder: pathlib.Path, label: str) -> pathlib.Path:
    """Where bench --archive writes a run's archive: FOLDER/LABEL.pgca, the
    characters of LABEL other than letters, digits and -_.= as _."""
    safe = "".join(ch if ch.isalnum() or ch in "-_.=" else "_" for ch in label)
    return folder / f"{safe}.pgca"


def _archive_place(path: pathlib.Path) -> None:
    """The folder of an archive made (with its parents) and writable, the
    file not there yet: never an earlier run's archive overwritten."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ClientError(f"cannot create the archive folder {path.parent}: {exc.strerror}") from exc
    if not os.access(path.parent, os.W_OK):
        raise ClientError(f"the archive folder {path.parent} is not writable")
    if path.exists():
        raise ClientError(f"{path} exists already: choose another label or --archive folder")


def write_archive(conninfo: str | None, label: str, path: pathlib.Path) -> None:
    """The ended run's archive (pg-chronicle export), from a session of its
    own (the export sets the session's TimeZone and DateStyle)."""
    from pg_chronicle import archive
    with connect(conninfo) as conn:
        man = archive.export_run(conn, label, path)
    echo(f"pg-chronicle: run {label} archived: {path} (archive {man['archive_id']})",
         file=sys.stderr, flush=True)


def set_warmup(conn: psycopg.Connection[Any], label: str, seconds: float) -> None:
    """Leaves the first seconds of the run out of every analysis of it
    (chronicle.run_set_warmup); a warm-up as long as the run is a ClientError."""
    with translated():
        conn.execute("SELECT chronicle.run_set_warmup(%s, make_interval(secs => %s))", (label, seconds))


def _run(conn: psycopg.Connection[Any], label: str, meta: dict[str, Any], pgbench: str,
         pgbench_args: list[str], env: dict[str, str], logdir: pathlib.Path,
         warmup_s: float | None = None) -> int:
    """One run: recorded, its warm-up set (warmup_s seconds left out of
    every analysis of it), summarised; its exit code (130 after a Ctrl-C,
    pgbench's when it failed)."""
    interval = snapshot_interval(conn)
    handler = _Interrupt()
    old = signal.signal(signal.SIGINT, handler)
    try:
        rc, interrupted, loaded, at_snapshot = _recorded(conn, label, meta, pgbench, pgbench_args,
                                                         env, logdir, interval, handler)
    finally:
        signal.signal(signal.SIGINT, old)
    nlines = sum(r["lines"] for r in loaded)
    echo(f"pg-chronicle: run {label} ended"
         + (" at the first snapshot after pgbench" if at_snapshot else "")
         + f"; {nlines:,} pgbench log lines loaded from {len(loaded)} file(s)"
         + (" (interrupted)" if interrupted else ""),
         file=sys.stderr, flush=True)
    if warmup_s:
        set_warmup(conn, label, warmup_s)
    echo("\n" + summary.format_summary(summary.collect(conn, label)), flush=True)
    if interrupted or handler.hit:
        return EXIT_INTERRUPTED
    if rc != 0:
        echo(f"pg-chronicle: pgbench exited with code {rc}", file=sys.stderr)
        return rc if rc is not None and rc > 0 else EXIT_ERROR
    return 0


def _recorded(conn: psycopg.Connection[Any], label: str, meta: dict[str, Any], pgbench: str,
              pgbench_args: list[str], env: dict[str, str], logdir: pathlib.Path,
              interval: float, handler: _Interrupt) -> tuple[int, bool, list[dict[str, Any]], bool]:
    """The run: run_begin, pgbench, run_end at the first snapshot after it,
    the logs loaded.  Returns pgbench's exit code, whether it was
    interrupted, load_logs()'s rows and whether the run ended at a snapshot."""
    # The run's window starts inside a snapshot interval, which would hold
    # whatever came just before run_begin (the questions above, the log
    # loaded by a bench run just before this one): silence until a
    # snapshot has recorded it.
    quiet = quiet_time(interval)
    if quiet > 2:
        echo(f"pg-chronicle: waiting {quiet:.0f} s for the collector's next snapshot "
             f"(chronicle.snapshot_interval = {interval:g} s) before the run begins",
             file=sys.stderr, flush=True)
    handler.waiting = True
    _wait_until(time.monotonic() + quiet, handler)
    handler.waiting = False
    if handler.hit:
        raise ClientError("interrupted before the run began", exit_code=EXIT_INTERRUPTED)
    with translated():
        conn.execute("SELECT chronicle.run_begin(%s, %s)", (label, Jsonb(meta)))
    cmd = [pgbench, *pgbench_args, "-l", f"--log-prefix={logdir / LOG_PREFIX}"]
    echo(f"pg-chronicle: run {label} started: {shlex.join(cmd)}", file=sys.stderr, flush=True)

    try:
        rc, pgbench_end = _pgbench(conn, cmd, env, handler, label, pgbench)
        interrupted = handler.hit or rc == -signal.SIGINT
        # Until the run is closed and the logs loaded, a further Ctrl-C is
        # only remembered (or cuts the wait for the snapshot short): an
        # open run would refuse the next run_begin.
        files = log_files(logdir)
        if rc != 0 and not interrupted and _whole_lines(files) == 0:
            with translated():
                conn.execute("SELECT chronicle.run_end(%s)", (label,))
                conn.execute("SELECT chronicle.run_delete(%s)", (label,))
            raise ClientError(f"pgbench failed (exit code {rc}) before any transaction; "
                              f"run {label} was removed",
                              exit_code=rc if rc > 0 else EXIT_ERROR)
        # No statement from here until the run has ended (end_run).
        at_snapshot = end_run(conn, label, pgbench_end, interval, handler)[1]
        if not at_snapshot:
            echo("pg-chronicle: no snapshot recorded after pgbench ended (is the collector "
                 "running? see chronicle.status()); the run ended now", file=sys.stderr)
        # The run has ended: the load is outside its window.
        loaded = load_logs(conn, label, files)
    except BaseException:
        # never leave the run open (the next run_begin would refuse)
        with contextlib.suppress(psycopg.Error):
            conn.execute("SELECT chronicle.run_end(%s) WHERE EXISTS (SELECT FROM chronicle.run r "
                         "WHERE r.label = %s AND r.ended IS NULL)", (label, label))
        raise
    return rc, interrupted, loaded, at_snapshot
