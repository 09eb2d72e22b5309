"""Run archives (pg-chronicle export / import, docs/runs.md "Run archives"):
a run recorded on one server, imported into another that recorded a run of
its own at the same time, reads there as on its origin, row by row; the same
archive twice is one run; bad archives are refused and change nothing."""

from __future__ import annotations

import hashlib
import io
import json
import os
import pathlib
import random
import re
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from pg_chronicle.archive import import_archive
from pg_chronicle.cli import main as cli_main
from pg_chronicle.db import ClientError, connect
from pg_chronicle.report import build

from conftest import Server, cli, other_pg_config, running_server, wait_for

pytestmark = pytest.mark.one_version

# What the analyses of a run give, each as the rows psql prints (every value
# as the server writes it): the reference an import must reproduce.
ANALYSES = {
    "run_summary": "SELECT * FROM chronicle.run_summary('{run}')",
    "load_profile": "SELECT * FROM chronicle.load_profile('{run}')",
    "slowest_intervals": "SELECT * FROM chronicle.slowest_intervals('{run}', 5)",
    "app_summary": "SELECT * FROM chronicle.app_summary('{run}')",
    "app_intervals": "SELECT * FROM chronicle.app_intervals('{run}')",
    # a time-based function over the run: run_window() makes the run's
    # origin the one read for the rest of the statement
    "timeline": "SELECT t.* FROM chronicle.run_window('{run}') w,"
                " chronicle.timeline(w.run_from, w.run_to, detail => true) t",
    "io_run_totals": "SELECT * FROM chronicle.io_run_totals('{run}') ORDER BY 1, 2, 3",
    "run_marks": "SELECT ts, kind, event FROM chronicle.run_marks('{run}')",
}


def analyses(srv: Server, run: str, app: bool = True, dbname: str = "postgres") -> dict[str, list[str]]:
    """app: the run has a pgbench log (slowest_intervals and app_* read it)."""
    return {name: srv.psql(q.format(run=run), dbname=dbname).splitlines() for name, q in ANALYSES.items()
            if app or not (name.startswith("app_") or name == "slowest_intervals")}


def bench(srv: Server, label: str, seconds: int = 5) -> None:
    cli(srv, "bench", "--label", label, "--", "-T", str(seconds), "-c", "2", "-n", check=True)


@pytest.fixture(scope="module")
def second() -> Iterator[Server]:
    with running_server() as srv:
        yield srv


@pytest.fixture(scope="module")
def runs(server: Server, second: Server, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """Run "a" on the first server and "b" on the second, at the same time;
    each exported; a mark in a's window."""
    d = tmp_path_factory.mktemp("archives")
    t = threading.Thread(target=bench, args=(second, "b"))
    t.start()
    bench(server, "a")
    t.join()
    server.psql("SELECT chronicle.mark('in a', (SELECT started + interval '2 s' FROM chronicle.run"
                " WHERE label = 'a'))")
    cli(server, "export", "a", "-o", str(d / "a.pgca"), check=True)
    cli(second, "export", "b", "-o", str(d / "b.pgca"), check=True)
    return d


def repository_state(srv: Server) -> str:
    return srv.psql("SELECT (SELECT count(*) FROM chronicle.run), (SELECT count(*) FROM chronicle.origin),"
                    " (SELECT count(*) FROM chronicle.archive_snapshot),"
                    " (SELECT count(*) FROM chronicle.archive_history),"
                    " (SELECT count(*) FROM chronicle.app_transaction),"
                    " (SELECT count(*) FROM chronicle.mark)")


def test_round_trip_and_overlapping_origins(server: Server, second: Server, runs: pathlib.Path) -> None:
    a_there = analyses(server, "a")
    b_here = analyses(second, "b")
    assert len(a_there["timeline"]) >= 4 and a_there["app_summary"] and len(b_here["timeline"]) >= 4
    assert any("in a" in line for line in a_there["run_marks"])

    p = cli(second, "import", str(runs / "a.pgca"), check=True)
    assert "run a" in p.stdout
    # b imported into its own server under another label: the same
    # history as an origin of its own, overlapping the local one in time
    cli(second, "import", str(runs / "b.pgca"), "--rename", "b-copy", check=True)
    assert second.psql("SELECT count(*) FROM chronicle.origin") == "2"
    assert second.psql("SELECT tstzrange(r.started, r.ended) && (SELECT tstzrange(b.started, b.ended)"
                       " FROM chronicle.run b WHERE b.label = 'b') FROM chronicle.run r"
                       " WHERE r.label = 'a'") == "t"

    # every analysis of each run as on its origin, row by row
    assert analyses(second, "a") == a_there
    assert analyses(second, "b-copy") == b_here
    assert analyses(second, "b") == b_here           # the local run reads no imported row

    # settings, environment and version travel with the run
    assert second.psql("SELECT count(*) FROM chronicle.compare_settings('b', 'b-copy')") == "0"
    assert second.psql("SELECT count(*) FROM chronicle.compare_environment('b', 'b-copy')") == "0"
    listing = cli(second, "runs", check=True).stdout
    assert "server" in listing and "version" in listing

    # the same archive again: one run, said so
    before = repository_state(second)
    p = cli(second, "import", str(runs / "a.pgca"), check=True)
    assert "imported already" in p.stdout
    assert repository_state(second) == before

    # an imported run exports again as it was imported, and reads the same
    cli(second, "export", "b-copy", "-o", str(runs / "b2.pgca"), check=True)
    cli(server, "import", str(runs / "b2.pgca"), check=True)
    assert analyses(server, "b-copy") == b_here


def report_data(conninfo: str, run: str, vs: str | None = None) -> tuple[Any, Any]:
    """The data behind every panel of pg-chronicle report RUN [--vs VS]
    (report.build(): what the page and the pictures draw), and its header
    without the time it was made; without the table of the import, which
    only an imported run has (checked here)."""
    with connect(conninfo) as conn:
        meta, panel_list, _ = build(conn, run, vs, None, None)
        imported = conn.execute("SELECT label, meta -> 'archive' ->> 'id' FROM chronicle.run"
                                " WHERE origin <> 0 AND label IN (%s, %s)", (run, vs)).fetchall()
    assert meta.pop("generated")
    (settings,) = [p for p in panel_list if p["id"] == "settings"]
    tables = [t for t in settings["tables"] if t["id"] == "settings.imported"]
    assert [t["rows"][0][1] for t in tables] == [i for _, i in sorted(imported, key=lambda r: r[0] != run)]
    settings["tables"] = [t for t in settings["tables"] if t["id"] != "settings.imported"]
    return meta, panel_list


def test_reports_and_comparisons_across_servers(server: Server, second: Server, runs: pathlib.Path) -> None:
    """The report of a run, its --vs comparison with a run of another server
    whose window overlaps it, and compare A B read each run from its own
    server: the same data wherever the runs are, local or imported (a
    repository that records nothing holds both)."""
    # a: recorded on server, imported on second; b the other way; a
    # database of server that records nothing imports both
    server.psql("CREATE DATABASE repo")
    server.psql("CREATE EXTENSION pg_chronicle", dbname="repo")
    repo = server.conninfo.replace("dbname=postgres", "dbname=repo")
    cli(second, "import", str(runs / "a.pgca"), check=True)
    cli(server, "import", str(runs / "b.pgca"), check=True)
    cli(server, "-d", repo, "import", str(runs / "a.pgca"), str(runs / "b.pgca"), check=True)
    assert server.psql("SELECT count(*) FROM chronicle.snapshot", dbname="repo") == "0"
    assert server.psql("SELECT count(DISTINCT origin) FROM chronicle.run WHERE label IN ('a', 'b')",
                       dbname="repo") == "2"

    # each run's report as on its origin, panel by panel
    for run, origin, there in (("a", server.conninfo, second.conninfo), ("b", second.conninfo, repo)):
        meta, want = report_data(origin, run)
        assert meta["intervals"] >= 4 and len(want) == 14
        assert any(c["series"] for p in want for c in p["charts"])
        for where in (there, repo):
            got_meta, got = report_data(where, run)
            assert got_meta == meta, (run, where)
            for p, q in zip(got, want, strict=True):
                assert p == q, (run, where, p["id"])

    # a --vs of the two: the same on each server and in the repository;
    # reading either run's time window in the other's server would not be
    vs = report_data(server.conninfo, "a", "b")
    assert report_data(second.conninfo, "a", "b") == vs
    assert report_data(repo, "a", "b") == vs
    compared = cli(server, "compare", "a", "b", check=True).stdout
    assert "load profile: A = a, B = b" in compared
    assert cli(second, "compare", "a", "b", check=True).stdout == compared
    assert cli(server, "-d", repo, "compare", "a", "b", check=True).stdout == compared


def test_delete_imported_runs(server: Server, runs: pathlib.Path) -> None:
    """Deleting an imported run deletes its origin whole (snapshots, history,
    marks, statement texts, the origin row): each archive is an origin of
    its own, so another archive of the same server and another server's
    runs are untouched; the archive then imports again."""
    # "a-early": the first 2.5 s of a, another archive of a's server
    server.psql("SELECT chronicle.run_label('a-early', started, started + interval '2.5 s')"
                " FROM chronicle.run WHERE label = 'a' AND origin = 0")
    cli(server, "export", "a-early", "-o", str(runs / "a-early.pgca"), check=True)
    server.psql("CREATE DATABASE repo2")
    server.psql("CREATE EXTENSION pg_chronicle", dbname="repo2")
    repo = server.conninfo.replace("dbname=postgres", "dbname=repo2")
    cli(server, "-d", repo, "import", *(str(runs / f) for f in ("a.pgca", "a-early.pgca", "b.pgca")),
        check=True)

    def q(sql: str) -> str:
        return server.psql(sql, dbname="repo2")

    def rows_of(origin: str) -> str:
        """the origin row, snapshots, history rows, marks and statement texts of an origin"""
        return q(f"""SELECT (SELECT count(*) FROM chronicle.origin WHERE origin_id = {origin}),
                            (SELECT count(*) FROM chronicle.archive_snapshot WHERE origin = {origin}),
                            (SELECT count(*) FROM chronicle.archive_history WHERE origin = {origin}),
                            (SELECT count(*) FROM chronicle.mark WHERE origin = {origin}),
                            (SELECT count(*) FROM chronicle.archive_statements_text
                              WHERE origin = {origin})""")

    origin_a = q("SELECT origin FROM chronicle.run WHERE label = 'a'")
    origin_early = q("SELECT origin FROM chronicle.run WHERE label = 'a-early'")
    assert origin_early != origin_a
    # one server, two origins: the same system identifier
    assert q(f"SELECT count(DISTINCT system_identifier) FROM chronicle.origin"
             f" WHERE origin_id IN ({origin_a}, {origin_early})") == "1"
    a_rows = [int(x) for x in rows_of(origin_a).split("|")]
    assert a_rows[0] == 1 and min(a_rows[1:4]) >= 1, a_rows
    early_rows, early = rows_of(origin_early), report_data(repo, "a-early")
    b_origin = q("SELECT origin FROM chronicle.run WHERE label = 'b'")
    b_rows, b_report = rows_of(b_origin), report_data(repo, "b")

    q("SELECT chronicle.run_delete('a')")
    assert rows_of(origin_a) == "0|0|0|0|0"
    assert rows_of(origin_early) == early_rows and report_data(repo, "a-early") == early
    assert rows_of(b_origin) == b_rows and report_data(repo, "b") == b_report

    q("SELECT chronicle.run_delete('a-early')")
    assert rows_of(origin_early) == "0|0|0|0|0"
    assert rows_of(b_origin) == b_rows and report_data(repo, "b") == b_report
    # the same archive imports again, as before
    cli(server, "-d", repo, "import", str(runs / "a.pgca"), check=True)
    assert report_data(repo, "a") == report_data(server.conninfo, "a")


def test_concurrent_imports_of_one_archive(server: Server, runs: pathlib.Path) -> None:
    """Two sessions import one archive under two labels at once: one run,
    the second import waits for the first and says the archive is imported
    already (_import_run() locks the archive's id before it looks for it)."""
    server.psql("CREATE DATABASE repo_conc")
    server.psql("CREATE EXTENSION pg_chronicle", dbname="repo_conc")
    repo = server.conninfo.replace("dbname=postgres", "dbname=repo_conc")
    result: dict[str, Any] = {}

    def second_import() -> None:
        try:
            with connect(repo) as conn2:
                result["second"] = import_archive(conn2, runs / "a.pgca", "conc-2")
        except (ClientError, psycopg.Error) as exc:  # reported by the assertion below
            result["second"] = exc

    with connect(repo) as conn1:
        # the first import's transaction left open (its own transaction is a
        # savepoint of this one) while the second one starts
        with conn1.transaction():
            assert import_archive(conn1, runs / "a.pgca", "conc-1") == ("conc-1", True)
            t = threading.Thread(target=second_import)
            t.start()
            wait_for(lambda: server.psql(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = 'repo_conc'"
                " AND wait_event_type = 'Lock' AND query LIKE '%_import_run%'") == "1",
                "the second import waiting for the first")
        t.join(timeout=120)
    assert result["second"] == ("conc-1", False), result
    assert server.psql("SELECT string_agg(label, ',') FROM chronicle.run", dbname="repo_conc") == "conc-1"
    assert server.psql("SELECT count(*) FROM chronicle.origin", dbname="repo_conc") == "1"


def test_import_keeps_triggers(server: Server, runs: pathlib.Path) -> None:
    """The import checks the foreign key of the pgbench rows once, not by its
    trigger per row (39_import.sql), only while app_transaction has no
    trigger of the user's: one of the user's fires for every row, and the
    rows are the same either way; the tables written after them fire their
    triggers again.  Which way the rows went: the rollup's statement trigger
    (pg_stat_user_functions) fires only where the triggers were not skipped."""
    rows = ("SELECT count(*), md5(string_agg(format('%s %s %s %s %s %s %s %s', ts, client_id, tx_no,"
            " script_no, latency_us, lag_us, retries, status), ',' ORDER BY ts, client_id, tx_no))"
            " FROM chronicle.app_transaction WHERE run_id = (SELECT run_id FROM chronicle.run"
            " WHERE label = 'a')")
    want = server.psql(rows)
    assert int(want.split("|")[0]) > 100
    fired: dict[str, str] = {}
    for db, table in (("repo_fast", "mark"), ("repo_checked", "app_transaction")):
        server.psql(f"CREATE DATABASE {db}")
        server.psql(f"ALTER DATABASE {db} SET track_functions = 'all'")
        server.psql("CREATE EXTENSION pg_chronicle;"
                    " CREATE TABLE public.fired (tbl text);"
                    " CREATE FUNCTION public.fire() RETURNS trigger LANGUAGE plpgsql"
                    "  AS $$BEGIN INSERT INTO public.fired VALUES (TG_TABLE_NAME); RETURN NULL; END$$;"
                    f" CREATE TRIGGER fire AFTER INSERT ON chronicle.{table}"
                    "  FOR EACH ROW EXECUTE FUNCTION public.fire()", dbname=db)
        cli(server, "-d", server.conninfo.replace("dbname=postgres", f"dbname={db}"),
            "import", str(runs / "a.pgca"), check=True)
        assert server.psql(rows, dbname=db) == want, db
        fired[db] = server.psql(f"SELECT (SELECT count(*) FROM public.fired WHERE tbl = '{table}'),"
                                f" (SELECT count(*) FROM chronicle.{table})", dbname=db)
    # every mark inserted after the pgbench rows, every pgbench row
    n, m = fired["repo_fast"].split("|")
    assert n == m and int(n) >= 1, fired
    n, m = fired["repo_checked"].split("|")
    assert n == m == want.split("|")[0], fired
    rollup_calls = ("SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions"
                    " WHERE schemaname = 'chronicle' AND funcname = '_rollup_app_changed'")
    wait_for(lambda: server.psql(rollup_calls, dbname="repo_checked") == "1",
             "the import's statistics in repo_checked")
    assert server.psql(rollup_calls, dbname="repo_fast") == "0"


def _with_transactions(src: pathlib.Path, dst: pathlib.Path, edit,  # type: ignore[no-untyped-def]
                       manifest_last: bool = False) -> None:
    """src with its app_transaction.csv's data lines given to edit (a list
    of lists of fields, changed in place), its checksum made to match;
    manifest_last: manifest.json after the members, not first."""
    with tarfile.open(src, "r:xz") as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    lines = files["app_transaction.csv"].decode().split("\n")
    rows = [line.split(",") for line in lines[1:] if line]
    edit(rows)
    files["app_transaction.csv"] = "\n".join([lines[0]] + [",".join(r) for r in rows] + [""]).encode()
    man = json.loads(files["manifest.json"])
    man["members"]["app_transaction"]["sha256"] = hashlib.sha256(files["app_transaction.csv"]).hexdigest()
    files["manifest.json"] = json.dumps(man).encode()
    with tarfile.open(dst, "w:xz") as tout:
        names = [n for n in files if n != "manifest.json"]
        for name in [*names, "manifest.json"] if manifest_last else ["manifest.json", *names]:
            info = tarfile.TarInfo(name)
            info.size = len(files[name])
            tout.addfile(info, io.BytesIO(files[name]))


def test_import_decoding(server: Server, runs: pathlib.Path) -> None:
    """The coded pgbench rows are decoded in one pass (src/import.c): values
    that do not decode (differences adding up beyond bigint, a time out of
    range, a status or a NULL the table refuses) fail the import with the
    reason and keep nothing, and the same session imports the archive
    afterwards, every row as recorded (from a tar file whose manifest is
    not first, which the client reads whole rather than as a stream).  The function itself refuses a
    table that is not temporary and rows out of their order."""
    db = "repo_decoding"
    server.psql(f"CREATE DATABASE {db}")
    server.psql("CREATE EXTENSION pg_chronicle", dbname=db)
    rows = ("SELECT count(*), md5(string_agg(format('%s %s %s %s %s %s %s %s %s', ts, client_id, tx_no,"
            " script_no, latency_us, lag_us, retries, status, source), ',' ORDER BY ts, client_id, tx_no))"
            " FROM chronicle.app_transaction WHERE run_id = (SELECT run_id FROM chronicle.run"
            " WHERE label = 'a')")
    bad = runs / "decoding"
    bad.mkdir(exist_ok=True)

    def field(i: int, k: int, v: str):  # type: ignore[no-untyped-def]
        return lambda r: r[i].__setitem__(k, v)
    cases = {"overflow": (field(1, 0, str(2**63 - 1)), "beyond bigint"),
             "far": (field(0, 0, str(-3 * 10**17)), "out of range"),
             "status": (field(2, 7, "bogus"), "app_transaction_status_check"),
             "null": (field(3, 1, ""), "null value in column \"client_id\"")}
    conn = connect(server.conninfo.replace("dbname=postgres", f"dbname={db}"))
    try:
        for name, (edit, words) in cases.items():
            _with_transactions(runs / "a.pgca", bad / f"{name}.pgca", edit)
            with pytest.raises(ClientError) as exc:
                import_archive(conn, bad / f"{name}.pgca")
            assert words in str(exc.value), (name, str(exc.value))
            assert server.psql("SELECT (SELECT count(*) FROM chronicle.run),"
                               " (SELECT count(*) FROM chronicle.app_transaction)", dbname=db) == "0|0", name
        # a tar file written by hand, its manifest last: read whole, the same rows
        _with_transactions(runs / "a.pgca", bad / "last.pgca", lambda r: None, manifest_last=True)
        assert import_archive(conn, bad / "last.pgca") == ("a", True)
        assert server.psql(rows, dbname=db) == server.psql(rows)

        # the function alone: a table of its own, rows out of order
        with pytest.raises(psycopg.errors.WrongObjectType, match="not a temporary table"):
            conn.execute("SELECT chronicle._import_transactions(1, 'chronicle.app_transaction')")
        with pytest.raises(psycopg.errors.NullValueNotAllowed, match="must not be NULL"):
            conn.execute("SELECT chronicle._import_transactions(NULL, 'chronicle.app_transaction')")
        with conn.transaction():
            conn.execute("CREATE TEMP TABLE coded (n bigint, ts bigint, client_id integer, tx_no bigint,"
                         " script_no integer, latency_us bigint, lag_us bigint, retries integer,"
                         " status text, source text) ON COMMIT DROP")
            conn.execute("INSERT INTO coded (n, ts, client_id, tx_no, script_no)"
                         " VALUES (1, 1735689600000000, 1, 1, 0), (3, 10, 1, 1, 0)")
            run = conn.execute("SELECT run_id FROM chronicle.run WHERE label = 'a'").fetchone()[0]  # type: ignore[index]
            out_of_order = 'row 3 of "coded" is not the row after 1'
            with pytest.raises(psycopg.errors.InternalError, match=out_of_order), conn.transaction():
                conn.execute("SELECT chronicle._import_transactions(%s, 'pg_temp.coded')", (run,))
            conn.execute("UPDATE coded SET n = 2 WHERE n = 3")  # read in the heap's order: 1, then 2
            assert conn.execute("SELECT chronicle._import_transactions(%s, 'pg_temp.coded')",
                                (run,)).fetchone() == (2,)
            assert conn.execute("SELECT count(*) FROM chronicle.app_transaction WHERE run_id = %s"
                                " AND ts = '2025-01-01 00:00:00.00001+00' AND tx_no = 2",
                                (run,)).fetchone() == (1,)
            raise psycopg.Rollback
    finally:
        conn.close()
    server.psql(f"DROP DATABASE {db}")


def test_server_side_export(server: Server, second: Server, runs: pathlib.Path) -> None:
    """chronicle.run_export() writes, through the psql command line of
    docs/runs.md, the archive pg-chronicle export writes (not compressed):
    the same members, byte for byte, which pg-chronicle import reads into
    another server as the run, every analysis equal; an open run is
    refused, and a role that may not read the history may not call it."""
    path = runs / "a-sql.pgca"
    subprocess.run(f"psql -XAtc \"SELECT encode(chronicle.run_export('a'), 'base64')\" | base64 -d > {path}",
                   shell=True, check=True, env=server.env())
    with tarfile.open(path, "r:") as tar:             # a tar file, not compressed
        man = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
    assert man["format_version"] == 2 and man["run"]["label"] == "a"
    client = runs / "a-client.pgca"
    cli(server, "export", "a", "-o", str(client), check=True)
    got, want = members(path), members(client)
    assert sorted(got) == sorted(want) and len(got["app_transaction.csv"]) > 100
    for name in want:
        assert got[name] == want[name], name
    with tarfile.open(client, "r:xz") as tar:
        client_man = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
    assert man["members"] == client_man["members"]
    assert man["server"] == client_man["server"] and man["window"].keys() == client_man["window"].keys()

    second.psql("CREATE DATABASE repo_sql")
    second.psql("CREATE EXTENSION pg_chronicle", dbname="repo_sql")
    cli(second, "-d", second.conninfo.replace("dbname=postgres", "dbname=repo_sql"), "import", str(path),
        check=True)
    assert analyses(second, "a", dbname="repo_sql") == analyses(server, "a")

    server.psql("SELECT chronicle.run_begin('open sql')")
    p = subprocess.run([str(server.bindir / "psql"), "-XAt", "-c", "SELECT chronicle.run_export('open sql')"],
                       check=False, env=server.env(), capture_output=True, text=True)
    assert p.returncode == 1 and 'run "open sql" is still open' in p.stderr, p.stderr
    server.psql("SELECT chronicle.run_end(); SELECT chronicle.run_delete('open sql')")
    server.psql("CREATE ROLE no_reader LOGIN")
    p = subprocess.run([str(server.bindir / "psql"), "-XAt", "-U", "no_reader",
                        "-c", "SELECT chronicle.run_export('a')"],
                       check=False, env=server.env(), capture_output=True, text=True)
    assert p.returncode == 1 and "permission denied for schema chronicle" in p.stderr, p.stderr


def test_bench_archive(server: Server, second: Server, tmp_path: pathlib.Path) -> None:
    """bench --archive DIR writes the run's archive when it ends (trials and
    sweep points each theirs: the same code, bench.main's loop), which
    imports elsewhere as the run; $PG_CHRONICLE_ARCHIVE_DIR is the default;
    an archive is never overwritten."""
    d = tmp_path / "archives"
    p = cli(server, "bench", "--label", "arch me", "--archive", str(d),
            "--", "-T", "1", "-c", "1", "-n", check=True)
    assert [f.name for f in d.iterdir()] == ["arch_me.pgca"]
    assert f"archived: {d / 'arch_me.pgca'}" in p.stderr
    with tarfile.open(d / "arch_me.pgca", "r:xz") as tar:
        man = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
    assert man["run"]["label"] == "arch me" and man["run"]["ended"]
    cli(second, "import", str(d / "arch_me.pgca"), check=True)
    assert analyses(second, "arch me") == analyses(server, "arch me")

    # the environment's folder; a file there already: refused before any run
    env = server.env() | {"PG_CHRONICLE_ARCHIVE_DIR": str(d)}
    (d / "taken.pgca").write_text("an earlier run's\n")
    p = cli(server, "bench", "--label", "taken", "--", "-T", "1", "-c", "1", "-n", env=env)
    assert p.returncode == 2 and "taken.pgca exists already" in p.stderr, p.stderr
    assert server.psql("SELECT count(*) FROM chronicle.run WHERE label = 'taken'") == "0"
    assert (d / "taken.pgca").read_text() == "an earlier run's\n"


def test_archives_cross_versions(server: Server, tmp_path: pathlib.Path) -> None:
    """An archive written on one major version imports on the other, and the
    other way round, with every analysis and the report's data equal."""
    with running_server(pg_config=other_pg_config()) as other:
        here, there = (srv.psql("SHOW server_version_num")[:2] for srv in (server, other))
        assert here != there, "the other installation is the same major version"
        t = threading.Thread(target=bench, args=(other, f"v{there}", 3))
        t.start()
        bench(server, f"v{here}", 3)
        t.join()
        for src, dst, label in ((server, other, f"v{here}"), (other, server, f"v{there}")):
            f = tmp_path / f"{label}.pgca"
            cli(src, "export", label, "-o", str(f), check=True)
            cli(dst, "import", str(f), check=True)
            assert dst.psql(f"SELECT server_version FROM chronicle.run WHERE label = '{label}'") \
                == src.psql("SHOW server_version")
            assert analyses(dst, label) == analyses(src, label), label
            assert report_data(dst.conninfo, label) == report_data(src.conninfo, label), label


def members(path: pathlib.Path) -> dict[str, list[list[str]]]:
    """The CSV members of an archive, as rows of fields."""
    import csv
    with tarfile.open(path, "r:*") as tar:
        return {m.name: list(csv.reader(io.TextIOWrapper(tar.extractfile(m), "utf-8")))  # type: ignore[arg-type]
                for m in tar.getmembers() if m.name.endswith(".csv")}


def test_window_holds_the_run(server: Server, second: Server, runs: pathlib.Path) -> None:
    """A run without a pgbench log that starts after the segment's keyframe
    and spans a restart: the archive starts at the snapshot at or before its start,
    which it holds as a keyframe of every key, and reads as on its origin."""
    snaps = "SELECT count(*) FROM chronicle.snapshot"
    n = int(second.psql(snaps))
    wait_for(lambda: int(second.psql(snaps)) >= n + 3, "three more snapshots")
    start = second.psql("SELECT now()")
    n = int(second.psql(snaps))
    wait_for(lambda: int(second.psql(snaps)) >= n + 2, "two snapshots in the run")
    # -l: the new server must not hold our pipes open
    subprocess.run([str(second.bindir / "pg_ctl"), "-D", str(second.datadir), "-l", str(second.logfile),
                    "-m", "fast", "-w", "restart"], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    n = int(second.psql(snaps))
    wait_for(lambda: int(second.psql(snaps)) >= n + 3, "three snapshots after the restart")
    second.psql(f"SELECT chronicle.run_label('restarted', '{start}', now())")
    path = runs / "restarted.pgca"
    cli(second, "export", "restarted", "-o", str(path), check=True)

    first, keyframes, segments = second.psql(
        f"SELECT max(ts) FILTER (WHERE ts <= '{start}'),"
        f" count(*) FILTER (WHERE keyframe AND ts <= '{start}'),"
        f" count(DISTINCT segment) FROM chronicle.snapshot").split("|")
    assert keyframes == "1" and segments == "2"   # the run starts after the keyframe
    got = members(path)
    snap = got["snapshot.csv"]
    col = {c: i for i, c in enumerate(snap[0])}
    assert second.psql(f"SELECT '{snap[1][col['ts']]}'::timestamptz = '{first}'") == "t"
    assert snap[1][col["keyframe"]] == "t"
    assert len({r[col["segment"]] for r in snap[1:]}) == 2
    # every io key at the first snapshot, whether it changed there or not
    io = got["history/io.csv"]
    at_first = [r for r in io[1:] if r[0] == snap[1][col["ts"]]]
    assert len(at_first) == int(second.psql(
        f"SELECT count(DISTINCT (backend_type, object, context)) FROM chronicle.io_history"
        f" WHERE ts <= '{first}'"))

    here = analyses(second, "restarted", app=False)
    assert len(here["timeline"]) >= 4     # two intervals in each segment
    cli(server, "import", str(path), check=True)
    assert analyses(server, "restarted", app=False) == here


def _retar(src: pathlib.Path, dst: pathlib.Path, manifest_edit=None, member_edit=None) -> None:  # type: ignore[no-untyped-def]
    with tarfile.open(src, "r:xz") as tin, tarfile.open(dst, "w:xz") as tout:
        for m in tin.getmembers():
            f = tin.extractfile(m)
            assert f is not None
            data = f.read()
            if m.name == "manifest.json" and manifest_edit:
                man = json.loads(data)
                manifest_edit(man)
                data = json.dumps(man).encode()
            elif m.name == "snapshot.csv" and member_edit:
                data = member_edit(data)
            info = tarfile.TarInfo(m.name)
            info.size = len(data)
            tout.addfile(info, io.BytesIO(data))


def test_bad_archives(server: Server, second: Server, runs: pathlib.Path) -> None:
    a = runs / "a.pgca"
    bad = runs / "bad"
    bad.mkdir(exist_ok=True)
    (bad / "truncated.pgca").write_bytes(a.read_bytes()[: a.stat().st_size // 2])
    (bad / "text.pgca").write_text("not an archive\n")
    _retar(a, bad / "checksum.pgca", member_edit=lambda d: d.replace(b",t,", b",f,", 1))
    _retar(a, bad / "newer.pgca", manifest_edit=lambda m: m.update(format_version=99))

    def set_label(m: dict) -> None:  # type: ignore[type-arg]
        m["run"]["label"] = "taken"
        m["archive_id"] = "another"
    _retar(a, bad / "taken.pgca", manifest_edit=set_label)
    server.psql("SELECT chronicle.run_label('taken', now() - interval '1 min', now())")

    before = repository_state(server)
    expect = {"truncated.pgca": "truncated", "text.pgca": "not a pg_chronicle run archive",
              "checksum.pgca": "checksum", "newer.pgca": "newer",
              "taken.pgca": "exists already with other content"}
    for name, words in expect.items():
        p = cli(server, "import", str(bad / name))
        assert p.returncode == 2, (name, p.stdout, p.stderr)
        assert words in p.stderr, (name, p.stderr)
        assert repository_state(server) == before, name
    assert "--rename" in cli(server, "import", str(bad / "taken.pgca")).stderr

    # an open run is not exported
    server.psql("SELECT chronicle.run_begin('open')")
    try:
        p = cli(server, "export", "open", "-o", str(bad / "open.pgca"))
        assert p.returncode == 2 and "still open" in p.stderr
        assert not (bad / "open.pgca").exists()
    finally:
        server.psql("SELECT chronicle.run_end()")

    # a role that may not write runs may not import
    before = repository_state(server)
    server.psql("CREATE ROLE reader LOGIN IN ROLE pg_read_all_stats")
    env = server.env() | {"PGUSER": "reader"}
    p = cli(server, "import", str(a), "--rename", "by-reader", env=env)
    assert p.returncode == 2 and "permission denied for function _import_run" in p.stderr, p.stderr
    assert repository_state(server) == before


def _mutants(src: pathlib.Path, rng: random.Random, n: int) -> Iterator[tuple[str, bytes]]:
    """n archives made from src at random: bytes flipped or cut in the
    compressed file, members cut or dropped, manifest fields changed, CSV
    rows with wrong types, extra or missing fields, huge values; the
    checksums and row counts made to match again half of the time, so that
    the rows reach the server."""
    raw = src.read_bytes()
    with tarfile.open(src, "r:xz") as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    odd = [None, 0, -1, 2**70, "", "x" * 100000, "2026-13-45", [], {}, True, 1.5e308]
    for i in range(n):
        kind = rng.choice(["flip", "cut", "member", "manifest", "row", "row", "row"])
        if kind == "flip":
            b = bytearray(raw)
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
            yield f"{i} flip", bytes(b)
            continue
        if kind == "cut":
            yield f"{i} cut", raw[: rng.randrange(len(raw))]
            continue
        man = json.loads(files["manifest.json"])
        out = dict(files)
        what = kind
        if kind == "member":
            name = rng.choice([k for k in out if k != "manifest.json"])
            if rng.random() < 0.3:
                del out[name]
            else:
                out[name] = out[name][: rng.randrange(len(out[name]) + 1)]
            what = f"member {name}"
        elif kind == "manifest":
            path = rng.choice([("format_version",), ("archive_id",), ("run",), ("run", "label"),
                               ("run", "started"), ("run", "ended"), ("run", "warmup"), ("server",),
                               ("server", "system_identifier"), ("members",), ("members", "snapshot"),
                               ("members", "snapshot", "columns"), ("members", "app_transaction", "encoding"),
                               ("members", "history/io", "rows"),
                               ("members", "mark", "file")])
            d = man
            for k in path[:-1]:
                d = d[k]
            d[path[-1]] = rng.choice(odd)
            what = f"manifest {'.'.join(path)}"
        else:
            name = rng.choice([k for k in out if k.endswith(".csv") and out[k].count(b"\n") > 1])
            lines = out[name].split(b"\n")
            j = rng.randrange(1, len(lines) - 1)
            fields = lines[j].split(b",")
            k = rng.randrange(len(fields))
            change = rng.choice(["type", "extra", "missing", "huge", "duplicate"])
            if change == "type":
                fields[k] = rng.choice([b"abc", b"1e400", b"99999999999999999999999", b"-", b"\"", b"t"])
            elif change == "extra":
                fields.append(b"1")
            elif change == "missing":
                del fields[k]
            elif change == "huge":
                fields[k] = b"9" * rng.choice([20, 400, 100000])
            if change == "duplicate":
                lines.insert(j, lines[j])
            else:
                lines[j] = b",".join(fields)
            out[name] = b"\n".join(lines)
            what = f"row {name} {change}"
        if rng.random() < 0.5:
            for m in man.get("members", {}).values() if isinstance(man.get("members"), dict) else []:
                if isinstance(m, dict) and m.get("file") in out:
                    m["sha256"] = hashlib.sha256(out[m["file"]]).hexdigest()
                    m["rows"] = max(0, out[m["file"]].count(b"\n") - 1)
            what += " (checksums fixed)"
        out["manifest.json"] = json.dumps(man).encode()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:xz", preset=0) as tout:
            for name, data in out.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tout.addfile(info, io.BytesIO(data))
        yield f"{i} {what}", buf.getvalue()


def test_fuzzed_archives(server: Server, second: Server, runs: pathlib.Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    """Archives mutated at random (seeded: PG_CHRONICLE_FUZZ_SEED, and
    PG_CHRONICLE_FUZZ_CASES cases, 40 by default; a long run:
    PG_CHRONICLE_FUZZ_CASES=2000) either import exactly the original or
    are refused with exit 2 and one line, the repository unchanged and no
    server error but the statement's own."""
    seed = int(os.environ.get("PG_CHRONICLE_FUZZ_SEED", "11"))
    cases = int(os.environ.get("PG_CHRONICLE_FUZZ_CASES", "40"))
    a = runs / "a.pgca"
    cli(second, "import", str(a), check=True)     # the original, once (idempotent)
    reference = analyses(server, "a")
    conn = f"host={second.sockdir} port={second.port} user=postgres dbname=postgres"
    log_from = second.logfile.stat().st_size
    mutant = runs / "mutant.pgca"
    outcomes: dict[str, int] = {}
    for what, data in _mutants(a, random.Random(seed), cases):
        mutant.write_bytes(data)
        before = repository_state(second)
        capsys.readouterr()
        code = cli_main(["import", "-d", conn, str(mutant), "--rename", "fuzzed"])
        out, err = capsys.readouterr()
        assert code in (0, 2), (seed, what, code, err)
        if code == 2:
            assert len(err.strip().splitlines()) == 1 and err.startswith("pg-chronicle: "), (seed, what, err)
            assert repository_state(second) == before, (seed, what)
        elif "imported already" not in out:
            # a new run: exactly the original
            assert analyses(second, "fuzzed") == reference, (seed, what)
            second.psql("SELECT chronicle.run_delete('fuzzed')")
        outcomes[what.split()[1]] = outcomes.get(what.split()[1], 0) + 1
    with open(second.logfile, errors="replace") as f:
        f.seek(log_from)
        bad = [line for line in f if re.search(r"PANIC|TRAP|FATAL|server process|XX000|internal error", line)]
    assert not bad, bad
    print(f"seed {seed}: {cases} mutants, {outcomes}")
