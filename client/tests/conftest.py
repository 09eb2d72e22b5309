"""A real PostgreSQL server for the client's tests.

PG_CONFIG (environment) names the installation to test, with pg_chronicle
installed into it (tools/test.sh builds and installs it before its layers
run).  One server per test session: initdb into a temporary folder, the
collector preloaded with pg_stat_statements, both extensions created in
the database "postgres" (chronicle.database's default), pgbench -i -s 1.
running_server() starts another such server with more settings
(test_recipes.py's small shared_buffers).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import psycopg
import pytest

CLIENT_DIR = pathlib.Path(__file__).resolve().parent.parent


@dataclasses.dataclass
class Server:
    bindir: pathlib.Path
    datadir: pathlib.Path
    sockdir: pathlib.Path
    port: int
    conninfo: str               # the database with the extension (postgres)
    bare_conninfo: str          # a database without it (nochronicle)
    logfile: pathlib.Path

    def env(self) -> dict[str, str]:
        """The environment of a client command: the PG* variables aim at the
        server (so pgbench finds it too), PATH starts with its bindir."""
        env = dict(os.environ)
        env.update(PGHOST=str(self.sockdir), PGPORT=str(self.port), PGDATABASE="postgres",
                   PGUSER="postgres", PATH=f"{self.bindir}:{env.get('PATH', '')}")
        env.pop("PGSERVICE", None)
        env.pop("PGPASSWORD", None)
        return env

    def psql(self, sql: str, dbname: str = "postgres") -> str:
        out = subprocess.run([str(self.bindir / "psql"), "-X", "-qAt", "-v", "ON_ERROR_STOP=1",
                              "-h", str(self.sockdir), "-p", str(self.port), "-U", "postgres",
                              "-d", dbname, "-c", sql],
                             check=True, capture_output=True, text=True)
        return out.stdout.strip()

    def connect(self) -> psycopg.Connection:
        return psycopg.connect(self.conninfo, autocommit=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _bindir(pg_config: str | None = None) -> pathlib.Path:
    pg_config = pg_config or os.environ.get("PG_CONFIG") or shutil.which("pg_config")
    if not pg_config:
        pytest.exit("PG_CONFIG is not set and no pg_config in PATH", returncode=2)
    out = subprocess.run([pg_config, "--bindir"], check=True, capture_output=True, text=True)
    return pathlib.Path(out.stdout.strip())


def other_pg_config() -> str:
    """The pg_config of the other PostgreSQL version, with pg_chronicle
    installed (tools/test.sh sets PG_CHRONICLE_OTHER_PG_CONFIG when it
    tests two); the test is skipped without one."""
    cfg = os.environ.get("PG_CHRONICLE_OTHER_PG_CONFIG", "")
    if not cfg:
        pytest.skip("PG_CHRONICLE_OTHER_PG_CONFIG is not set: no other PostgreSQL version to cross "
                    "(tools/test.sh sets it when it tests both 17 and 18)")
    share = subprocess.run([cfg, "--sharedir"], capture_output=True, text=True, check=False)
    if share.returncode != 0 or not (pathlib.Path(share.stdout.strip()) / "extension"
                                     / "pg_chronicle.control").exists():
        pytest.skip(f"PG_CHRONICLE_OTHER_PG_CONFIG={cfg}: not a pg_config with pg_chronicle installed")
    return cfg


def wait_for(predicate, what: str, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    """Polls predicate() until true; fails the test after timeout seconds
    (a bound on a hang, not a timed assertion)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


@contextlib.contextmanager
def running_server(conf: str = "", pg_config: str | None = None) -> Iterator[Server]:
    """A server as the module says (conf: more lines of postgresql.conf;
    pg_config: another installation's, with pg_chronicle installed, than
    PG_CONFIG's), stopped and removed when the block ends."""
    bindir = _bindir(pg_config)
    top = pathlib.Path(tempfile.mkdtemp(prefix="pgc-"))
    datadir, sockdir, logfile = top / "data", top, top / "server.log"
    port = _free_port()
    subprocess.run([str(bindir / "initdb"), "-D", str(datadir), "-U", "postgres", "--no-sync",
                    "-A", "trust"], check=True, capture_output=True)
    with open(datadir / "postgresql.conf", "a") as f:
        f.write(f"""
port = {port}
listen_addresses = ''
unix_socket_directories = '{sockdir}'
shared_preload_libraries = 'pg_chronicle,pg_stat_statements'
chronicle.database = 'postgres'
fsync = off
{conf}""")
    subprocess.run([str(bindir / "pg_ctl"), "-D", str(datadir), "-l", str(logfile), "-w", "start"],
                   check=True, capture_output=True)
    srv = Server(bindir=bindir, datadir=datadir, sockdir=sockdir, port=port,
                 conninfo=f"host={sockdir} port={port} user=postgres dbname=postgres",
                 bare_conninfo=f"host={sockdir} port={port} user=postgres dbname=nochronicle",
                 logfile=logfile)
    try:
        srv.psql("CREATE EXTENSION pg_stat_statements")
        srv.psql("CREATE EXTENSION pg_chronicle")
        srv.psql("CREATE DATABASE nochronicle")
        subprocess.run([str(bindir / "pgbench"), "-i", "-s", "1", "-q"], env=srv.env(),
                       check=True, capture_output=True)
        # the collector records once the extension exists
        wait_for(lambda: srv.psql("SELECT count(*) FROM chronicle.snapshot") not in ("", "0"),
                 "the collector's first snapshot")
        yield srv
    finally:
        subprocess.run([str(bindir / "pg_ctl"), "-D", str(datadir), "-m", "immediate", "stop"],
                       capture_output=True, check=False)
        if os.environ.get("PG_CHRONICLE_KEEP_TMP"):
            print(f"kept {top}", file=sys.stderr)
        else:
            shutil.rmtree(top, ignore_errors=True)


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    with running_server() as srv:
        yield srv


def cli(srv: Server, *args: str, timeout: float = 300, check: bool = False,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs the pg-chronicle command (python3 -m pg_chronicle, from the
    checkout, as an installed console script would run) against srv, in
    srv.env() unless env is given."""
    env = dict(srv.env() if env is None else env)
    env["PYTHONPATH"] = str(CLIENT_DIR) + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    p = subprocess.run([sys.executable, "-m", "pg_chronicle", *args], env=env, text=True,
                       capture_output=True, timeout=timeout, check=False)
    if check and p.returncode != 0:
        pytest.fail(f"pg-chronicle {' '.join(args)} exited {p.returncode}\n"
                    f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p
