"""The pg-chronicle command line: bench, report, runs, compare, mark, sweep,
sweep-report.

    pg-chronicle [-d CONNINFO] [--server NAME] COMMAND ...

The connection is a libpq conninfo string or URI (-d), else the PG*
environment variables.  Errors are one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import math
import os
import pathlib
import sys
from collections.abc import Sequence

from pg_chronicle import __version__
from pg_chronicle.db import EXIT_ERROR, ClientError, connect, set_server
from pg_chronicle.text import echo, visible


def _meta_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--meta wants KEY=VALUE, got {text!r}")
    return key, value


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-d", "--dbname", metavar="CONNINFO", default=argparse.SUPPRESS,
                        help="libpq conninfo or URI of the database holding the history "
                             "(default: the PG* environment variables)")
    common.add_argument("--server", metavar="NAME", default=argparse.SUPPRESS,
                        help="on a central database: read this subscribed server's runs and "
                             "history (runs, report, compare; docs/central.md)")

    p = argparse.ArgumentParser(
        prog="pg-chronicle", parents=[common],
        description="Record pgbench runs with pg_chronicle, report and compare them.")
    p.add_argument("--version", action="version", version=f"pg-chronicle {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    b = sub.add_parser(
        "bench", parents=[common],
        help="run pgbench as a recorded run, then print its summary",
        usage="pg-chronicle bench [options] -- PGBENCH_ARGUMENTS...",
        description="Opens a run (chronicle.run_begin), runs pgbench with a "
                    "per-transaction log, loads the log into the run, ends it and "
                    "prints a summary; with --trials N, N such runs.  Everything after -- "
                    "goes to pgbench.")
    b.add_argument("--label", "-l", help="run label (default: bench-<UTC timestamp>); with "
                                         "--trials, the configuration's name")
    b.add_argument("--trials", type=int, metavar="N",
                   help="record N runs of the same pgbench, labelled LABEL#1 .. LABEL#N, one "
                        "after the other: the trials of configuration LABEL")
    b.add_argument("--meta", action="append", type=_meta_pair, default=[], metavar="KEY=VALUE",
                   help="metadata stored with the run (repeatable)")
    b.add_argument("--report", type=pathlib.Path, metavar="DIR",
                   help="also write the report of the run into DIR")
    b.add_argument("--vs", metavar="RUN",
                   help="with --report: compare with this earlier run (or configuration)")
    b.add_argument("--pgbench", metavar="PATH", default=None,
                   help="pgbench to run (default: $PGBENCH, else pgbench in PATH)")
    b.add_argument("--warmup", type=_seconds, metavar="SECONDS", default=None,
                   help="leave the run's first SECONDS out of every analysis of it (the "
                        "summary, report and comparisons; the charts show them shaded)")
    b.add_argument("--archive", type=pathlib.Path, metavar="DIR", default=_archive_default(),
                   help="write each run's archive (pg-chronicle export) into DIR/LABEL.pgca when "
                        "it ends (default: $PG_CHRONICLE_ARCHIVE_DIR, else none)")
    b.add_argument("--keep-logs", type=pathlib.Path, metavar="DIR",
                   help="write pgbench's logs into DIR (with --trials: DIR/1, DIR/2, ...) "
                        "and keep them (default: a temporary folder, removed)")

    r = sub.add_parser("report", parents=[common], help="write the report of a run",
                       description="Writes DIR/index.html (self-contained) and a PNG and "
                                   "an SVG per panel.  RUN (and RUN_B) may name a "
                                   "configuration, whose trials are the runs RUN#1, RUN#2, ...")
    r.add_argument("run", metavar="RUN")
    r.add_argument("--vs", metavar="RUN_B", help="compare with this run or configuration (overlaid)")
    r.add_argument("--from", dest="from_ts", metavar="TS",
                   help="start of the window (timestamp; default: the run's start)")
    r.add_argument("--to", dest="to_ts", metavar="TS",
                   help="end of the window (timestamp; default: the run's end)")
    r.add_argument("-o", "--output", type=pathlib.Path, metavar="DIR",
                   help="output folder (default: ./report-RUN)")
    r.add_argument("--latency-threshold", type=_threshold, metavar="MS", default=None,
                   help="count the transactions slower than MS milliseconds per interval "
                        "(default: the run's pgbench --latency-limit, if any)")

    sub.add_parser("runs", parents=[common], help="list the recorded runs")

    c = sub.add_parser("compare", parents=[common],
                       help="load profile, settings and environment of two runs",
                       description="A and B are runs, or configurations whose trials are "
                                   "the runs A#1, A#2, ... (pg-chronicle bench --trials): then "
                                   "the medians of the trials, B/A with an interval and a "
                                   "verdict.")
    c.add_argument("a", metavar="A")
    c.add_argument("b", metavar="B")

    s = sub.add_parser(
        "sweep", parents=[common],
        help="one recorded pgbench run per value of --clients or --rate, and the curve",
        usage="pg-chronicle sweep --label NAME (--clients LIST | --rate LIST) [options] "
              "-- PGBENCH_ARGUMENTS...",
        description="Records one run per value, in the order given, each as bench records "
                    "one, labelled NAME@clients=V (NAME@rate=V; with --trials N, NAME@clients=V#1 "
                    ".. #N): pgbench gets -c V (and -j min(V, CPUs) unless the arguments have a "
                    "-j), or -R V, before the arguments after --.  Then prints tps, latency p50 "
                    "and p99 and the average active sessions by wait class per value; with -o "
                    "DIR also draws them (DIR/sweep.png, sweep.svg, index.html).")
    s.add_argument("--label", "-l", required=True, metavar="NAME",
                   help="the sweep's name (without '@' or '#')")
    var = s.add_mutually_exclusive_group(required=True)
    var.add_argument("--clients", metavar="LIST", help="pgbench's -c of each point, e.g. 1,2,4,8,16")
    var.add_argument("--rate", metavar="LIST",
                     help="pgbench's -R (transactions per second) of each point, e.g. 100,200,400")
    s.add_argument("--trials", type=int, metavar="N",
                   help="record N runs per point (NAME@clients=V#1 .. #N); its numbers are the "
                        "medians of its trials")
    s.add_argument("--meta", action="append", type=_meta_pair, default=[], metavar="KEY=VALUE",
                   help="metadata stored with every run (repeatable)")
    s.add_argument("--vs", metavar="OTHER_SWEEP",
                   help="overlay this earlier sweep (of the same variable) in the pictures")
    s.add_argument("-o", "--output", type=pathlib.Path, metavar="DIR",
                   help="also write DIR/sweep.png, DIR/sweep.svg and DIR/index.html")
    s.add_argument("--pgbench", metavar="PATH", default=None,
                   help="pgbench to run (default: $PGBENCH, else pgbench in PATH)")
    s.add_argument("--warmup", type=_seconds, metavar="SECONDS", default=None,
                   help="leave every run's first SECONDS out of its numbers")
    s.add_argument("--archive", type=pathlib.Path, metavar="DIR", default=_archive_default(),
                   help="write each run's archive into DIR/LABEL.pgca when it ends (default: "
                        "$PG_CHRONICLE_ARCHIVE_DIR, else none)")

    wu = sub.add_parser("warmup", parents=[common],
                        help="set how much of a run's start every analysis leaves out",
                        description="Sets the warm-up of RUN (chronicle.run_set_warmup; the "
                                    "role that recorded the run): its first SECONDS are left out "
                                    "of its summary, report and comparisons, and drawn shaded. "
                                    "0 takes the warm-up away.")
    wu.add_argument("run", metavar="RUN")
    wu.add_argument("seconds", type=_seconds, metavar="SECONDS")

    sr = sub.add_parser("sweep-report", parents=[common],
                        help="print and draw a recorded sweep (without running anything)",
                        description="Prints the table of sweep NAME as sweep prints it and writes "
                                    "DIR/sweep.png, sweep.svg and index.html.")
    sr.add_argument("name", metavar="NAME")
    sr.add_argument("--vs", metavar="OTHER_SWEEP", help="overlay this sweep (of the same variable)")
    sr.add_argument("-o", "--output", type=pathlib.Path, metavar="DIR",
                    help="output folder (default: ./sweep-NAME)")

    ex = sub.add_parser("export", parents=[common], help="write a run's archive (a file)",
                        description="Writes everything the analysis and report of RUN read (its "
                                    "window of every source's history, snapshots, pgbench rows, "
                                    "metrics, marks, statement texts, settings, environment and the "
                                    "server's identity) into FILE, a compressed, versioned archive "
                                    "that pg-chronicle import reads into any database with the "
                                    "extension.")
    ex.add_argument("run", metavar="RUN")
    ex.add_argument("-o", "--output", type=pathlib.Path, metavar="FILE", required=True)

    im = sub.add_parser("import", parents=[common], help="import run archives",
                        description="Imports each FILE (pg-chronicle export) in a transaction of "
                                    "its own: the run keeps the server it was recorded on.  The "
                                    "same archive twice is one run.")
    im.add_argument("files", metavar="FILE", nargs="+", type=pathlib.Path)
    im.add_argument("--rename", metavar="LABEL",
                    help="import the run under this label (one FILE only)")

    m = sub.add_parser("mark", parents=[common], help="record an event, drawn on every time chart",
                       description="Records EVENT (chronicle.mark) now, or at --at; prints the "
                                   "mark's id and time.  The report draws it on every time chart "
                                   "of the runs whose window holds it.")
    m.add_argument("event", metavar="EVENT", help="what happened, e.g. 'COPY started'")
    m.add_argument("--at", metavar="TS", help="when it happened (timestamp; default: now)")
    return p


def _archive_default() -> pathlib.Path | None:
    """Where bench and sweep write each run's archive unless --archive says:
    $PG_CHRONICLE_ARCHIVE_DIR (empty or unset: nowhere)."""
    d = os.environ.get("PG_CHRONICLE_ARCHIVE_DIR")
    return pathlib.Path(d) if d else None


def _split_pgbench(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Everything after the first -- is pgbench's."""
    args = list(argv)
    if "--" in args:
        i = args.index("--")
        return args[:i], args[i + 1:]
    return args, []


def _report_dir(run: str) -> pathlib.Path:
    safe = "".join(ch if ch.isalnum() or ch in "-_.=" else "_" for ch in run)
    return pathlib.Path(f"report-{safe}")


def _seconds(text: str) -> float:
    """A number of seconds: 0 or more, finite."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (v >= 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"a number of seconds is 0 or more, not {text}")
    return v


def _threshold(text: str) -> float:
    """A latency threshold in ms: a positive finite number."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of milliseconds: {text!r}") from None
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"a threshold is a positive number of milliseconds, not {text}")
    return v


def _report(conninfo: str | None, run: str, vs: str | None, from_ts: str | None,
            to_ts: str | None, outdir: pathlib.Path, threshold_ms: float | None = None) -> pathlib.Path:
    try:
        from pg_chronicle.report import write_checked
    except ImportError as exc:
        raise ClientError(f"the report module is not available: {exc}") from exc
    return write_checked(conninfo, run, vs, from_ts, to_ts, outdir, threshold_ms)


# The commands that read a subscribed server of a central database with
# --server (the others write, or read this server's files).
SERVER_COMMANDS = ("runs", "report", "compare", "export", "sweep-report")


def main(argv: Sequence[str] | None = None) -> int:
    own, pgbench_args = _split_pgbench(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(own)
    conninfo: str | None = getattr(args, "dbname", None)
    server: str | None = getattr(args, "server", None)
    if server is not None and args.command not in SERVER_COMMANDS:
        echo(f"pg-chronicle: --server reads a subscribed server: {', '.join(SERVER_COMMANDS)} only",
             file=sys.stderr)
        return EXIT_ERROR
    set_server(server)
    if pgbench_args and args.command not in ("bench", "sweep"):
        echo("pg-chronicle: '--' and arguments after it belong to bench and sweep only",
             file=sys.stderr)
        return EXIT_ERROR
    try:
        if args.command == "bench":
            from pg_chronicle import bench
            return bench.main(conninfo, args, pgbench_args)
        if args.command == "sweep":
            from pg_chronicle import sweep
            return sweep.main(conninfo, args, pgbench_args)
        if args.command == "sweep-report":
            from pg_chronicle import sweep
            sweep.show(conninfo, args.name, args.vs, args.output or sweep.default_dir(args.name))
            return 0
        if args.command == "report":
            out = args.output or _report_dir(args.run)
            path = _report(conninfo, args.run, args.vs, args.from_ts, args.to_ts, out,
                           args.latency_threshold)
            echo(str(path))
            return 0
        if args.command == "runs":
            from pg_chronicle import summary
            with connect(conninfo) as conn:
                echo(summary.runs_table(conn))
            return 0
        if args.command == "mark":
            from pg_chronicle import db
            with connect(conninfo) as conn:
                row = db.query(conn, "SELECT mark_id, ts FROM chronicle.mark(%s, %s::timestamptz)",
                               (args.event, args.at))[0]
            echo(f"mark {row['mark_id']} at {row['ts'].isoformat()}")
            return 0
        if args.command == "export":
            from pg_chronicle import archive
            with connect(conninfo) as conn:
                man = archive.export_run(conn, args.run, args.output)
            echo(f"{args.output}: run {args.run}, archive {man['archive_id']}")
            return 0
        if args.command == "import":
            from pg_chronicle import archive
            if args.rename is not None and len(args.files) != 1:
                raise ClientError("--rename renames one run: give one FILE")
            with connect(conninfo) as conn:
                for f in args.files:
                    label, new = archive.import_archive(conn, f, args.rename)
                    echo(f"{f}: run {label}" + ("" if new else " (imported already: nothing done)"))
            return 0
        if args.command == "warmup":
            from pg_chronicle import bench
            with connect(conninfo) as conn:
                bench.set_warmup(conn, args.run, args.seconds)
            echo(f"run {args.run}: warm-up {args.seconds:g} s")
            return 0
        if args.command == "compare":
            from pg_chronicle import compare
            with connect(conninfo) as conn:
                echo(compare.compare_text(conn, args.a, args.b))
            return 0
    except ClientError as exc:
        echo(f"pg-chronicle: {visible(exc.message)}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        return 0
    except OSError as exc:          # a report folder that cannot be written, ...
        echo(f"pg-chronicle: {visible(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    raise AssertionError(f"unhandled command {args.command}")


if __name__ == "__main__":
    sys.exit(main())
