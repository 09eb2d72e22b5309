"""Run archives: a run that outlives its server (pg-chronicle export / import).

An archive is a tar file compressed with xz (docs/runs.md, "Run archives"),
or not compressed (chronicle.run_export(), the server's):

    manifest.json       format, format_version, archive_id, the run, the server,
                        the data window, and per member: columns, rows, sha256
    snapshot.csv        the snapshots of the window
    history/SOURCE.csv  each source's rows of the window, as its view
                        chronicle.SOURCE_history shows them (keys as text)
    app_transaction.csv, app_interval.csv, app_metric.csv, mark.csv,
    statements_text.csv

Members are CSV with a header, written by COPY in UTC with ISO dates: text,
so an archive does not depend on the server's major version or CPU.  The
data window holds the run only: from the snapshot at or before its start
(its warm-up included), written as a keyframe of every key's latest row (the
baselines of the run's first interval), to the first snapshot after its end.
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import pathlib
import tarfile
import uuid
import zlib
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import sql

from pg_chronicle.db import ClientError, query, query_one, run_named, translate, translated

FORMAT = "pg_chronicle run archive"
FORMAT_VERSION = 2

# The members whose columns are coded (format version 2): member -> the
# columns of the table they are copied into (after n, the row's position),
# and the manifest's "encoding" of the member, which chronicle._import_run()
# decodes.
_CODED: dict[str, tuple[str, dict[str, str]]] = {
    "app_transaction": (
        "ts bigint, client_id integer, tx_no bigint, script_no integer, latency_us bigint,"
        " lag_us bigint, retries integer, status text, source text",
        {"ts": "microseconds since the previous row (the first: since 1970-01-01 UTC)",
         "tx_no": "difference to the previous row", "status": "empty: ok"}),
}

# The members besides the sources' history: name -> the query of its rows
# (%(run)s the run's id, %(lo)s and %(hi)s the data window, read in the
# run's origin).
_MEMBERS: dict[str, str] = {
    "snapshot": "SELECT ts, segment, keyframe OR ts = %(lo)s AS keyframe, collector, duration_ms,"
                " rows_written, wal_bytes, errors,"
                " system_identifier, server_name FROM chronicle._snapshot"
                " WHERE ts >= %(lo)s AND ts <= %(hi)s ORDER BY ts",
    # the pgbench log, most of an archive's bytes: in time order, ts and
    # tx_no as their differences to the previous row (the first row's ts:
    # microseconds since 1970), status NULL for ok (_CODED)
    "app_transaction": "SELECT (extract(epoch FROM t.ts) * 1000000)::bigint"
                       " - coalesce(lag((extract(epoch FROM t.ts) * 1000000)::bigint) OVER w, 0) AS ts,"
                       " t.client_id, t.tx_no - coalesce(lag(t.tx_no) OVER w, 0) AS tx_no, t.script_no,"
                       " t.latency_us, t.lag_us, t.retries, nullif(t.status, 'ok') AS status, t.source"
                       " FROM chronicle.app_transaction t WHERE t.run_id = %(run)s"
                       " WINDOW w AS (ORDER BY t.ts, t.client_id, t.tx_no)"
                       " ORDER BY t.ts, t.client_id, t.tx_no",
    "app_interval": "SELECT interval_start, num_transactions, sum_latency_us, sum_latency_2, min_latency_us,"
                    " max_latency_us, sum_lag_us, sum_lag_2, min_lag_us, max_lag_us, skipped, retried,"
                    " retries, serialization_failures, deadlock_failures, interval_secs"
                    " FROM chronicle.app_interval WHERE run_id = %(run)s ORDER BY interval_start",
    "app_metric": "SELECT ts, name, value FROM chronicle.app_metric WHERE run_id = %(run)s"
                  " ORDER BY ts, name",
    "mark": "SELECT ts, event, owner FROM chronicle.mark"
            " WHERE origin = chronicle._origin() AND ts > %(lo)s AND ts <= %(hi)s ORDER BY ts, mark_id",
    "statements_text": "SELECT t.dbid, t.queryid, t.query FROM chronicle._statements_text t"
                       " WHERE (t.dbid, t.queryid) IN (SELECT h.dbid, h.queryid"
                       "  FROM chronicle.statements_history h"
                       "  WHERE h.ts >= %(lo)s AND h.ts <= %(hi)s) ORDER BY 1, 2",
}

# The table each member is copied into on import (its columns: the
# member's, by name).
_TARGETS: dict[str, str] = {
    "snapshot": "chronicle._snapshot",
    "app_transaction": "chronicle.app_transaction",
    "app_interval": "chronicle.app_interval",
    "app_metric": "chronicle.app_metric",
    "mark": "chronicle.mark",
    "statements_text": "chronicle._statements_text",
}


def _session(conn: psycopg.Connection[Any]) -> None:
    """The text forms an archive holds, whatever the session's settings."""
    with translated():
        conn.execute("SET TimeZone = 'UTC'")
        conn.execute("SET DateStyle = 'ISO, YMD'")
        conn.execute("SET extra_float_digits = 3")


def _copy_out(conn: psycopg.Connection[Any], select: str,
              params: dict[str, Any]) -> tuple[bytes, list[str], int]:
    """A query's rows as CSV with a header, its columns and its row count."""
    buf = io.BytesIO()
    with translated(), conn.cursor() as cur:
        # COPY takes no parameters: the query with its values as literals
        bound = psycopg.ClientCursor(conn).mogrify(select, params)
        q = sql.SQL("COPY ({}) TO STDOUT WITH (FORMAT csv, HEADER true)").format(sql.SQL(bound))
        with cur.copy(q) as cp:
            for chunk in cp:
                buf.write(chunk)
        rows = cur.rowcount
    data = buf.getvalue()
    header = data.split(b"\n", 1)[0].decode()
    return data, [c.strip('"') for c in header.split(",")] if header else [], rows


def export_run(conn: psycopg.Connection[Any], run: str, path: pathlib.Path) -> dict[str, Any]:
    """Writes the archive of an ended run into path; returns its manifest."""
    _session(conn)
    r = query_one(conn, "SELECT r.*, r.run_id AS id"
                        " FROM chronicle.run r WHERE " + run_named(conn, "%s"), (run,))
    if r is None:
        query(conn, "SELECT chronicle._run_id(%s, 'pg-chronicle export')", (run,))  # the error
        raise AssertionError("unreachable")
    if r["ended"] is None:
        raise ClientError(f'run "{run}" is still open: end it (chronicle.run_end()) before exporting it')
    # read in the run's origin: an imported run exports as it was imported
    query(conn, "SELECT set_config('chronicle.origin', %s, false)", (str(r["origin"]),))
    if r["origin"] == 0:
        srv = query_one(conn, "SELECT s.system_identifier, s.name AS server_name,"
                              " current_setting('server_version') AS server_version,"
                              " (SELECT extversion FROM pg_extension WHERE extname = 'pg_chronicle')"
                              "   AS extension_version FROM chronicle.server() s")
    else:
        srv = query_one(conn, "SELECT system_identifier, server_name, server_version, extension_version"
                              " FROM chronicle.origin WHERE origin_id = %s", (r["origin"],))
    assert srv is not None
    # The data window: from the snapshot at or before the run's start (its
    # warm-up included: the report shades it) to the first one after its end.
    win = query_one(conn, """
        SELECT coalesce((SELECT max(s.ts) FROM chronicle._snapshot s WHERE s.ts <= %(f)s), %(f)s) AS lo,
               coalesce((SELECT min(s.ts) FROM chronicle._snapshot s WHERE s.ts > %(t)s), %(t)s) AS hi""",
                    {"f": r["started"], "t": r["ended"]})
    assert win is not None
    first = query_one(conn, "SELECT segment FROM chronicle._snapshot WHERE ts = %s", (win["lo"],))
    params = {"run": r["id"], "lo": win["lo"], "hi": win["hi"],
              "segment": first["segment"] if first else win["lo"]}
    columns: dict[str, list[tuple[str, bool]]] = {}
    for row in query(conn, "SELECT c.source, c.column_name, c.key FROM chronicle._source_columns() c"
                           " ORDER BY c.source, c.ordinal"):
        columns.setdefault(row["source"], []).append((row["column_name"], row["key"]))
    members: dict[str, bytes] = {}
    manifest_members: dict[str, Any] = {}
    for name, select in list(_MEMBERS.items()) + [
            (f"history/{s}", _history_select(s, cols)) for s, cols in columns.items()]:
        data, cols, rows = _copy_out(conn, select, params)
        members[name + ".csv"] = data
        manifest_members[name] = {"file": name + ".csv", "columns": cols, "rows": rows,
                                  "sha256": hashlib.sha256(data).hexdigest()}
        if name in _CODED:
            manifest_members[name]["encoding"] = _CODED[name][1]
    query(conn, "RESET chronicle.origin")
    run_meta = {k: r[k] for k in ("label", "meta", "settings", "server_version", "environment")}
    run_meta["started"] = r["started"].isoformat()
    run_meta["ended"] = r["ended"].isoformat()
    run_meta["warmup"] = str(r["warmup"].total_seconds()) + " seconds"
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "archive_id": str(uuid.uuid4()),
        "run": run_meta,
        "server": {k: srv[k] for k in ("system_identifier", "server_name", "server_version",
                                       "extension_version")},
        "window": {"from": win["lo"].isoformat(), "to": win["hi"].isoformat()},
        "members": manifest_members,
    }
    tmp = path.with_name(path.name + ".part")
    # preset 0: the pgbench log's microseconds and latencies are noise that
    # no preset compresses; 6 takes 20 times as long for a few per cent
    with tarfile.open(tmp, "w:xz", preset=0) as tar:
        _add(tar, "manifest.json", json.dumps(manifest, indent=1, default=str).encode())
        for name, data in members.items():
            _add(tar, name, data)
    tmp.replace(path)
    return manifest


def _history_select(source: str, cols: list[tuple[str, bool]]) -> str:
    """A source's rows of the data window, as its view shows them: at the
    window's first snapshot (%(lo)s) every key's latest row in that
    snapshot's segment, what the analyses pair the run's first interval
    with (the archive marks that snapshot a keyframe), then the rows after
    it.  The latest rows are read from the keyframe before it, as the engine
    reads them (chronicle._keyframe()), and the statements' from the start
    of the segment, as statements_top() does: a keyframe writes only the
    statements that changed."""
    view = sql.Identifier("chronicle", f"{source}_history").as_string()
    names = ", ".join(sql.Identifier(c).as_string() for c, _ in cols)
    keys = ", ".join(sql.Identifier(c).as_string() for c, k in cols if k)
    since = ("%(segment)s" if source == "statements" else
             f"chronicle._keyframe('chronicle.{source}_history', %(segment)s, %(lo)s)")
    latest = (f"SELECT DISTINCT ON ({keys}) * FROM {view} WHERE ts >= {since} AND ts <= %(lo)s"
              f" ORDER BY {keys}, ts DESC" if keys else
              f"SELECT * FROM {view} WHERE ts >= {since} AND ts <= %(lo)s ORDER BY ts DESC LIMIT 1")
    return (f"SELECT * FROM (SELECT %(lo)s::timestamptz AS ts, {names} FROM ({latest}) k"
            f" UNION ALL SELECT ts, {names} FROM {view} WHERE ts > %(lo)s AND ts <= %(hi)s) h"
            " ORDER BY ts")


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


# What a damaged or foreign file raises while it is read.
_READ_ERRORS = (tarfile.TarError, lzma.LZMAError, EOFError, zlib.error, ValueError, OSError)

# Bytes of a member copied at a time.
_CHUNK = 1 << 20


def _checked_manifest(data: bytes | None, path: pathlib.Path) -> dict[str, Any]:
    """The manifest of an archive, checked (_check_manifest())."""
    try:
        manifest = json.loads(data) if data is not None else None
    except ValueError:
        manifest = None
    if manifest is None:
        raise ClientError(f"{path}: not a pg_chronicle run archive (no readable manifest.json)")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ClientError(f"{path}: not a pg_chronicle run archive (manifest format is not {FORMAT!r})")
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ClientError(f"{path}: archive format version {version} is newer than this client reads "
                          f"({FORMAT_VERSION}); upgrade pg-chronicle")
    _check_manifest(manifest, path)
    return manifest


def _not_an_archive(path: pathlib.Path, exc: BaseException) -> ClientError:
    return ClientError(f"{path}: not a pg_chronicle run archive, or truncated ({exc})")


def read_archive(path: pathlib.Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The manifest and members of an archive, checked: a file that is not
    an archive, truncated, of a newer format or whose checksums do not
    match is a ClientError."""
    try:
        # xz (pg-chronicle export) or not compressed (chronicle.run_export())
        with tarfile.open(path, "r:*") as tar:
            files: dict[str, bytes] = {}
            for m in tar.getmembers():
                f = tar.extractfile(m)
                if f is not None:
                    files[m.name] = f.read()
    except _READ_ERRORS as exc:
        raise _not_an_archive(path, exc) from exc
    manifest = _checked_manifest(files.get("manifest.json"), path)
    for m in manifest["members"].values():
        data = files.get(m["file"])
        if data is None:
            raise ClientError(f"{path}: member {m['file']} is missing (truncated archive?)")
        _check_sum(hashlib.sha256(data), m, path)
    return manifest, files


def _check_sum(digest: Any, m: dict[str, Any], path: pathlib.Path) -> None:
    if digest.hexdigest() != m["sha256"]:
        raise ClientError(f"{path}: checksum of {m['file']} does not match the manifest "
                          "(damaged archive)")


def _check_manifest(man: dict[str, Any], path: pathlib.Path) -> None:
    """The manifest's shape, before anything reads it: a ClientError names
    the first field that is not as format version 1 or 2 writes it."""
    def bad(field: str) -> ClientError:
        return ClientError(f"{path}: damaged archive: manifest field {field} is missing or malformed")

    def text(v: Any) -> bool:
        return isinstance(v, str) and v != ""

    if not isinstance(man.get("format_version"), int) or man["format_version"] < 1:
        raise bad("format_version")
    if not text(man.get("archive_id")):
        raise bad("archive_id")
    run, srv, members = man.get("run"), man.get("server"), man.get("members")
    if not isinstance(run, dict):
        raise bad("run")
    for k in ("label", "started", "ended"):
        if not text(run.get(k)):
            raise bad(f"run.{k}")
    if not isinstance(srv, dict):
        raise bad("server")
    if not isinstance(members, dict) or "snapshot" not in members:
        raise bad("members")
    for name, m in members.items():
        known = name in _TARGETS or (name.startswith("history/") and name[8:].isidentifier())
        if not known or not isinstance(m, dict):
            raise bad(f"members.{name}")
        cols = m.get("columns")
        if (not text(m.get("file")) or not text(m.get("sha256"))
                or not isinstance(cols, list) or not cols or not all(text(c) for c in cols)
                or not isinstance(m.get("rows"), int) or isinstance(m["rows"], bool) or m["rows"] < 0
                or not isinstance(m.get("encoding", {}), dict)):
            raise bad(f"members.{name}")


def import_archive(conn: psycopg.Connection[Any], path: pathlib.Path,
                   rename: str | None = None) -> tuple[str, bool]:
    """Imports one archive in one transaction; returns the run's label and
    whether it was imported now (False: the same archive was already).

    The archive is read once, as a stream: its manifest (the first member,
    as both exports write it) is checked before anything is written, then
    each member is decompressed and checksummed while COPY sends it, so
    that the server's work overlaps the client's.  A member whose checksum
    does not match, or that is missing, fails the import after its COPY:
    the transaction is rolled back, nothing is kept."""
    notices: list[str] = []

    def keep(diag: psycopg.errors.Diagnostic) -> None:
        if diag.message_primary:
            notices.append(diag.message_primary)

    _session(conn)
    conn.add_notice_handler(keep)
    try:
        with tarfile.open(path, "r|*") as tar:
            first = tar.next()
            f = tar.extractfile(first) if first is not None and first.name == "manifest.json" else None
            if f is None:
                # not written by an export: the whole file, in any order
                tar.close()
                manifest, files = read_archive(path)
                members: Iterator[tuple[str, Iterator[bytes]]] = (
                    (name, iter([data])) for name, data in files.items())
            else:
                manifest = _checked_manifest(f.read(), path)
                members = _stream(tar)
            label = _import(conn, manifest, members, path, rename)
    except _READ_ERRORS as exc:
        raise _not_an_archive(path, exc) from exc
    finally:
        conn.remove_notice_handler(keep)
    return label, not any("imported already" in n for n in notices)


def _stream(tar: tarfile.TarFile) -> Iterator[tuple[str, Iterator[bytes]]]:
    """The members after the manifest, each as its chunks, in the order of
    the file (each must be read before the next)."""
    for m in tar:
        f = tar.extractfile(m)
        if f is not None:
            yield m.name, iter(lambda f=f: f.read(_CHUNK), b"")  # type: ignore[misc]


def _import(conn: psycopg.Connection[Any], manifest: dict[str, Any],
            files: Iterator[tuple[str, Iterator[bytes]]], path: pathlib.Path,
            rename: str | None) -> str:
    """The transaction of import_archive(): each listed member of files
    copied in, then chronicle._import_run()."""
    label = rename or manifest["run"]["label"]
    by_file = {m["file"]: (name, m) for name, m in manifest["members"].items()}
    with translated(), conn.transaction():
        for file, chunks in files:
            if file not in by_file:
                continue
            name, m = by_file.pop(file)
            _copy_in(conn, name, m, chunks, path)
        for file in by_file:
            raise ClientError(f"{path}: member {file} is missing (truncated archive?)")
        # after the members: a damaged archive is said as damaged first
        existing = query_one(conn, "SELECT meta -> 'archive' ->> 'id' AS id FROM chronicle.run"
                                   " WHERE label = %s AND server = 0", (label,))
        if existing is not None and existing["id"] != manifest["archive_id"]:
            raise ClientError(f'{path}: a run labelled "{label}" exists already with other content'
                              " (hint: import it under another label with --rename NEW_LABEL)")
        run = query_one(conn, "SELECT label FROM chronicle._import_run(%s::jsonb, %s)",
                        (json.dumps(manifest), label))
    assert run is not None
    return str(run["label"])


def _copy_in(conn: psycopg.Connection[Any], name: str, m: dict[str, Any], chunks: Iterator[bytes],
             path: pathlib.Path) -> None:
    """A member (its chunks) into pg_temp.import_<name>, a table with the
    columns of the member's target here, dropped at commit; its checksum
    checked once it is sent."""
    src = name.removeprefix("history/")
    target = f"chronicle.{src}_history" if name.startswith("history/") else _TARGETS.get(name)
    if target is None:
        raise ClientError(f"{path}: unknown member {name} (an archive of a newer pg_chronicle?)")
    table = sql.Identifier("import_" + src)
    if name.startswith("history/") and query_one(conn, "SELECT to_regclass(%s) AS t", (target,))["t"] is None:  # type: ignore[index]
        raise ClientError(f"{path}: source {src} is not known to this pg_chronicle (a newer one wrote it)")
    cols = [sql.Identifier(c) for c in m["columns"]]
    digest = hashlib.sha256()
    with conn.cursor() as cur:
        if "encoding" in m:
            if name not in _CODED or m["encoding"] != _CODED[name][1]:
                raise ClientError(f"{path}: {m['file']} has an encoding this client does not read")
            # n: the row's position, the order the differences add up in
            cur.execute(sql.SQL("CREATE TEMP TABLE {} (n bigint GENERATED ALWAYS AS IDENTITY, {})"
                                " ON COMMIT DROP").format(table, sql.SQL(_CODED[name][0])))
        else:
            cur.execute(sql.SQL("CREATE TEMP TABLE {} ON COMMIT DROP AS SELECT * FROM {} LIMIT 0").format(
                table, sql.SQL(target)))
        try:
            with cur.copy(sql.SQL("COPY {} ({}) FROM STDIN WITH (FORMAT csv, HEADER true)").format(
                    table, sql.SQL(", ").join(cols))) as cp:
                for chunk in chunks:
                    digest.update(chunk)
                    cp.write(chunk)
        except psycopg.Error as exc:
            # a member that is not what its manifest says is said so
            for chunk in chunks:
                digest.update(chunk)
            _check_sum(digest, m, path)
            raise ClientError(f"{path}: damaged archive: {m['file']}: {translate(exc).message}") from exc
        _check_sum(digest, m, path)
        if cur.rowcount != m["rows"]:
            raise ClientError(f"{path}: {m['file']} holds {cur.rowcount} rows, the manifest says {m['rows']}")
        # statistics: without them the planner of _import_run() joins a
        # source's rows to the snapshots in a nested loop
        cur.execute(sql.SQL("ANALYZE {}").format(table))
