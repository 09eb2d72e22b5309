"""Bad input: a clear one-line message on stderr and exit code 2, never a
traceback; the database is left as it was (no run left open)."""

from __future__ import annotations

import pytest

from conftest import Server, cli


def assert_clean_error(p, *fragments: str, code: int = 2) -> None:  # type: ignore[no-untyped-def]
    assert p.returncode == code, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout
    msg = [ln for ln in p.stderr.splitlines() if ln.startswith("pg-chronicle:")]
    assert msg, p.stderr
    for f in fragments:
        assert f in msg[-1], (f, p.stderr)


def no_open_run(server: Server) -> bool:
    return server.psql("SELECT count(*) FROM chronicle.run WHERE ended IS NULL") == "0"


@pytest.fixture(scope="module")
def one_run(server: Server) -> str:
    cli(server, "bench", "--label", "e-run", "--", "-c", "1", "-T", "2", check=True)
    return "e-run"


def test_unknown_run(server: Server, one_run: str) -> None:
    assert_clean_error(cli(server, "report", "no-such-run", "-o", "/tmp/never"),
                       'unknown run "no-such-run"', "e-run")
    assert_clean_error(cli(server, "compare", one_run, "no-such-run"), 'unknown run "no-such-run"')
    assert_clean_error(cli(server, "report", one_run, "--vs", "no-such-run"),
                       'unknown run "no-such-run"')


def test_empty_window(server: Server, one_run: str) -> None:
    # a window outside the run
    assert_clean_error(cli(server, "report", one_run, "--from", "2000-01-01", "--to", "2000-01-02"),
                       "empty")
    # a window inside the run without a snapshot: its first microsecond
    started = server.psql(f"SELECT started FROM chronicle.run WHERE label = '{one_run}'")
    first = server.psql(f"SELECT min(ts) FROM chronicle.snapshot WHERE ts > '{started}'")
    assert first
    assert_clean_error(cli(server, "report", one_run, "--from", started,
                           "--to", server.psql(
                               f"SELECT least('{first}'::timestamptz - interval '1 microsecond', "
                               f"'{started}'::timestamptz + interval '1 microsecond')")),
                       "no snapshot")
    # not a timestamp
    assert_clean_error(cli(server, "report", one_run, "--from", "yesterday-ish"), "timestamp")


def test_server_without_the_extension(server: Server, one_run: str) -> None:
    for args in (["runs"], ["compare", "a", "b"], ["report", one_run],
                 ["bench", "--", "-T", "1"]):
        assert_clean_error(cli(server, "-d", server.bare_conninfo, *args),
                           'database "nochronicle" has no pg_chronicle extension')
    # -d after the command too
    assert_clean_error(cli(server, "runs", "-d", server.bare_conninfo), "no pg_chronicle extension")


def test_unreachable_server(server: Server) -> None:
    assert_clean_error(cli(server, "-d", f"host={server.sockdir}/nothing-here port=1", "runs"),
                       "cannot connect to the server")
    assert_clean_error(cli(server, "-d", "this is not a conninfo", "runs"), "")


def test_bench_bad_input(server: Server, one_run: str) -> None:
    # pgbench refuses its arguments: no transaction, the run is removed
    p = cli(server, "bench", "--label", "e-bad", "--", "--no-such-option")
    assert_clean_error(p, "pgbench failed", code=1)
    assert server.psql("SELECT count(*) FROM chronicle.run WHERE label = 'e-bad'") == "0"
    # a label in use
    assert_clean_error(cli(server, "bench", "--label", one_run, "--", "-T", "1"),
                       f'a run labelled "{one_run}" exists already')
    # arguments bench owns or refuses
    assert_clean_error(cli(server, "bench", "--", "--log-prefix=/tmp/x"), "--keep-logs")
    assert_clean_error(cli(server, "bench", "--", "-i"), "pgbench -i")
    assert_clean_error(cli(server, "bench", "--pgbench", "/nonexistent/pgbench", "--", "-T", "1"),
                       "not an executable")
    assert_clean_error(cli(server, "runs", "--", "-T", "1"), "bench and sweep only")
    assert no_open_run(server)


def test_usage_errors_are_argparse_errors(server: Server) -> None:
    p = cli(server, "report")
    assert p.returncode == 2 and "Traceback" not in p.stderr and "usage:" in p.stderr
    p = cli(server, "bench", "--meta", "novalue", "--", "-T", "1")
    assert p.returncode == 2 and "KEY=VALUE" in p.stderr
