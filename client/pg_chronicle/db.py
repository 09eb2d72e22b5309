"""Connecting to the database that holds the history, and turning errors into
one-line messages.

Every failure a user can cause (a server that does not answer, a database
without the extension, an unknown run, an empty window, a malformed
timestamp) becomes a ClientError: cli.main() prints its message on stderr and
exits with its code, never with a traceback.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
from psycopg import errors as pgerrors
from psycopg.abc import AdaptContext, Buffer
from psycopg.adapt import AdaptersMap, Loader
from psycopg.pq import Format
from psycopg.rows import dict_row

# Exit codes of the command line (documented in docs/client.md).
EXIT_OK = 0
EXIT_ERROR = 2          # bad input, no server, no extension, any server error
EXIT_INTERRUPTED = 130  # bench ended by Ctrl-C (128 + SIGINT)


class ClientError(Exception):
    """A failure to report in one line, with the exit code to end with."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def translate(exc: psycopg.Error) -> ClientError:
    """A ClientError saying what the server (or libpq) said, in one line,
    with the server's hint when it gave one."""
    diag = getattr(exc, "diag", None)
    primary = diag.message_primary if diag is not None else None
    if isinstance(exc, pgerrors.InvalidSchemaName):
        return ClientError(
            "this database has no pg_chronicle extension: " + (primary or _first_line(str(exc)))
            + "; connect to the database named by chronicle.database, "
            "where CREATE EXTENSION pg_chronicle was run")
    if (isinstance(exc, pgerrors.UndefinedFunction)
            and primary is not None and "chronicle." in primary):
        return ClientError(
            f"{primary}: the pg_chronicle extension of this database is older than "
            "the client (ALTER EXTENSION pg_chronicle UPDATE)")
    if primary is None:
        # libpq's own errors (connection refused, bad conninfo): no diag
        msg = _first_line(str(exc))
        if isinstance(exc, psycopg.OperationalError):
            return ClientError(f"cannot connect to the server: {msg}")
        return ClientError(msg)
    msg = primary
    if diag is not None and diag.message_hint:
        msg += f" (hint: {_first_line(diag.message_hint)})"
    return ClientError(msg)


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """Re-raises any psycopg error inside the block as a ClientError."""
    try:
        yield
    except psycopg.Error as exc:
        raise translate(exc) from exc


class _TimestampOrText(Loader):
    """timestamptz, timestamp and date as psycopg loads them, except a value
    Python's datetime cannot hold (infinity, -infinity, BC, after year
    9999): that one comes as the server's text, so that one row never breaks
    a listing (text.when() prints both)."""

    def __init__(self, oid: int, context: AdaptContext | None = None) -> None:
        super().__init__(oid, context)
        usual = psycopg.adapters.get_loader(oid, Format.TEXT)
        assert usual is not None
        self._usual = usual(oid, context)

    def load(self, data: Buffer) -> Any:
        try:
            return self._usual.load(data)
        except psycopg.DataError:
            return bytes(data).decode()


# The adapters of every connection of the client (connect(), and the
# report's second session).  Text format only: the client reads no binary.
ADAPTERS = AdaptersMap(psycopg.adapters)
for _name in ("timestamptz", "timestamp", "date"):
    ADAPTERS.register_loader(_name, _TimestampOrText)


def open_connection(conninfo: str, **kwargs: Any) -> psycopg.Connection[Any]:
    """psycopg.connect() in autocommit mode with the client's ADAPTERS."""
    return psycopg.connect(conninfo, autocommit=True, context=ADAPTERS, **kwargs)


# The subscribed server the commands read on a central database
# (pg-chronicle --server NAME, docs/central.md): every session connect()
# opens reads it (use_server()).  None: the server connected to.
_reading: dict[str, str | None] = {"server": None}

# SQL: run r is one of the runs a label names in this session: those of the
# server read (chronicle.run_server, set by chronicle.use_server()), else
# this server's and the imported ones.  An extension older than 0.3.0 has
# neither the column nor the setting: every run is this server's.
RUN_OF_SERVER = ("coalesce((to_jsonb(r) ->> 'server')::int, 0)"
                 " = coalesce(nullif(current_setting('chronicle.run_server', true), ''), '0')::int")


def has_function(conn: psycopg.Connection[Any], name: str) -> bool:
    """Whether the extension of conn's database has function name (a
    signature when it holds "("): what the client reads of an extension
    older than itself."""
    fn = "to_regprocedure" if "(" in name else "to_regproc"
    row = query_one(conn, f"SELECT {fn}(%s) IS NOT NULL AS ok", (name,))
    return row is not None and bool(row["ok"])


def run_named(conn: psycopg.Connection[Any], param: str) -> str:
    """SQL: run r is the one the run label in placeholder param names, as
    every function of the extension reads a label (chronicle._find_run():
    a run of the server read, or server:label for a subscribed server's
    run); before 0.3.0, the run of that label."""
    if has_function(conn, "chronicle._find_run(text)"):
        return f"r.run_id = chronicle._find_run({param})"
    return f"r.label = {param} AND " + RUN_OF_SERVER


def set_server(name: str | None) -> None:
    """Makes every session connect() opens from now on read the
    subscribed server name (None: the server connected to)."""
    _reading["server"] = name


def reading_server() -> str | None:
    """The subscribed server of set_server(), or None."""
    return _reading["server"]


def use_server(conn: psycopg.Connection[Any]) -> None:
    """Makes conn's session read the server of set_server(), if any: its
    history (chronicle.origin) and its runs (chronicle.run_server).  An
    unknown name is a ClientError (the server's, with its hint)."""
    if _reading["server"] is not None:
        query(conn, "SELECT chronicle.use_server(%s)", (_reading["server"],))


def connect(conninfo: str | None, check_extension: bool = True) -> psycopg.Connection[Any]:
    """Connects with a libpq conninfo string or URI (None or '': the PG*
    environment variables alone), in autocommit mode.  With
    check_extension, a database without pg_chronicle is a ClientError;
    the session reads the server of set_server()."""
    try:
        conn = open_connection(conninfo or "", application_name="pg-chronicle")
    except psycopg.Error as exc:
        raise translate(exc) from exc
    if check_extension:
        with translated():
            row = conn.execute(
                "SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'pg_chronicle'"
            ).fetchone()
        if row is None:
            dbname = conn.info.dbname
            conn.close()
            raise ClientError(
                f'database "{dbname}" has no pg_chronicle extension; connect to the '
                "database named by chronicle.database (where CREATE EXTENSION "
                "pg_chronicle was run), for example with -d 'dbname=postgres'")
        try:
            use_server(conn)
        except ClientError:
            conn.close()
            raise
    return conn


def query(conn: psycopg.Connection[Any], sql: str,
          params: Sequence[Any] | dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """All rows of a query as dicts, errors translated."""
    with translated(), conn.cursor(row_factory=dict_row) as cur:
        cur.execute(sql, params)
        return cur.fetchall() if cur.description is not None else []


def query_one(conn: psycopg.Connection[Any], sql: str,
              params: Sequence[Any] | dict[str, Any] | None = None) -> dict[str, Any] | None:
    rows = query(conn, sql, params)
    return rows[0] if rows else None


def run_window(conn: psycopg.Connection[Any], run: str,
               from_ts: str | None = None, to_ts: str | None = None) -> tuple[Any, Any]:
    """The (from, to] window of a run, narrowed by --from/--to (timestamps as
    the server reads them).  An unknown run, a window that ends before it
    starts, or one without any recorded snapshot is a ClientError."""
    row = query_one(
        conn,
        "SELECT w.run_from, w.run_to, "
        "       greatest(w.run_from, coalesce(%(f)s::timestamptz, w.run_from)) AS f, "
        "       least(w.run_to, coalesce(%(t)s::timestamptz, w.run_to)) AS t, "
        "       (SELECT coalesce((to_jsonb(r) ->> 'origin')::int, 0) FROM chronicle.run r "
        "         WHERE " + run_named(conn, "%(run)s") + ") AS origin "
        "  FROM chronicle.run_window(%(run)s) w",
        {"run": run, "f": from_ts, "t": to_ts})
    assert row is not None
    f, t = row["f"], row["t"]
    if isinstance(f, str) or isinstance(t, str):
        raise ClientError(
            f'the window ({f}, {t}] of run "{run}" is not a finite time range '
            "(a bound is infinite, BC or after year 9999); pg-chronicle report narrows it "
            "with --from and --to")
    if t <= f:
        raise ClientError(
            f'the window ({f}, {t}] is empty: run "{run}" spans '
            f"({row['run_from']}, {row['run_to']}]")
    # the snapshots of the run's server: this one's, or those imported with it
    n = query_one(conn,
                  "SELECT count(*) AS n FROM chronicle.snapshot s WHERE s.ts > %s AND s.ts <= %s"
                  if row["origin"] == 0 else
                  "SELECT count(*) AS n FROM chronicle.archive_snapshot s"
                  " WHERE s.origin = %s AND s.ts > %s AND s.ts <= %s",
                  (f, t) if row["origin"] == 0 else (row["origin"], f, t))
    if n is None or n["n"] == 0:
        raise ClientError(
            f'no snapshot was recorded in the window ({f}, {t}] of run "{run}": nothing to show'
            " (is the collector running? see chronicle.status())")
    return f, t


def read_origin(conn: psycopg.Connection[Any], origin: int) -> None:
    """Makes conn's session read the history of origin (the setting
    chronicle.origin; docs/storage.md, "Origins") until it is set again:
    the functions of a time window (timeline(), io_deltas(), marks(), ...)
    read the server that chronicle.origin names, this one (0) unless set,
    whereas those of a run read the run's.  Nothing is sent when the session
    reads origin already, so an extension older than origins, which has no
    such setting, is never asked about this server's (0)."""
    query(conn, "SELECT set_config('chronicle.origin', %(o)s, false)"
                " WHERE coalesce(current_setting('chronicle.origin', true), '0') <> %(o)s",
          {"o": str(origin)})
