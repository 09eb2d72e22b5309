#!/usr/bin/env python3
"""A TCP proxy that delays what it forwards: network latency without netem.

    delay_proxy.py --delay-ms D --target HOST:PORT|SOCKET_PATH [--port P] [--ready-file F]

Listens on 127.0.0.1 (port P, default 0: one the kernel picks) and forwards
every connection to the target: a TCP address, or a Unix socket path (the
server's socket file, e.g. /tmp/.s.PGSQL.5432).  Every chunk read from
either side is written to the other D milliseconds (one way) after it was
read, in the order read: a request and its answer each wait D, so a round
trip takes 2 D longer.  With D = 0 chunks are written as soon as read (the
proxy's own cost only).  Once it listens it writes its port into the ready
file (and to stdout), then runs until SIGTERM or SIGINT.

What it models: a fixed propagation delay on a fast link.  What it does not:
a bandwidth limit (a chunk of any size waits D, then goes as fast as the
loopback takes it), jitter, loss or reordering; the delay is per chunk as
read (up to 64 kB), not per packet.  Both of its sockets have TCP_NODELAY
(as libpq and the server set on theirs), so Nagle's algorithm adds no
wait of its own.  The proxy is one Python process on the same machine: its
CPU (a few microseconds per chunk) is taken from the machine under test,
and asyncio's timers wake up to about a millisecond late, so the added
round trip is 2 D plus up to a millisecond or two: measure it (SELECT 1
through the proxy and directly) rather than assume it.

Python's standard library only (asyncio).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import sys

CHUNK = 65536


def _nodelay(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    """Copies reader to writer, each chunk delay seconds after it was read,
    in order.  A reader task and a writer task, so that chunks read while
    earlier ones wait are not delayed twice."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def read() -> None:
        try:
            while data := await reader.read(CHUNK):
                queue.put_nowait((loop.time() + delay, data))
        except OSError:
            pass
        queue.put_nowait((loop.time() + delay, b""))

    async def write() -> None:
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()

    reading = asyncio.ensure_future(read())
    try:
        await write()
    finally:
        reading.cancel()


async def _serve(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter,
                 target: str, delay: float) -> None:
    try:
        if target.startswith("/"):
            server_r, server_w = await asyncio.open_unix_connection(target)
        else:
            host, _, port = target.rpartition(":")
            server_r, server_w = await asyncio.open_connection(host, int(port))
    except OSError as exc:
        print(f"delay_proxy: cannot connect to {target}: {exc}", file=sys.stderr)
        client_w.close()
        return
    _nodelay(client_w)
    _nodelay(server_w)
    try:
        await asyncio.gather(_pipe(client_r, server_w, delay), _pipe(server_r, client_w, delay),
                             return_exceptions=True)
    finally:
        for w in (client_w, server_w):
            w.close()
            with contextlib.suppress(OSError):
                await w.wait_closed()


async def main(args: argparse.Namespace) -> None:
    delay = args.delay_ms / 1000.0
    server = await asyncio.start_server(lambda r, w: _serve(r, w, args.target, delay),
                                        "127.0.0.1", args.port)
    port = server.sockets[0].getsockname()[1]
    if args.ready_file:
        tmp = f"{args.ready_file}.tmp"
        with open(tmp, "w") as f:
            f.write(f"{port}\n")
        os.replace(tmp, args.ready_file)
    print(port, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="A TCP proxy that delays each chunk by a one-way delay.")
    p.add_argument("--delay-ms", type=float, required=True, help="one-way delay in milliseconds")
    p.add_argument("--target", required=True, help="HOST:PORT, or the path of a Unix socket")
    p.add_argument("--port", type=int, default=0, help="port to listen on (127.0.0.1); 0: any free one")
    p.add_argument("--ready-file", help="file the port is written into once the proxy listens")
    args = p.parse_args(argv)
    if not args.delay_ms >= 0 or args.delay_ms > 60000:
        p.error(f"--delay-ms wants 0 to 60000, got {args.delay_ms}")
    return args


if __name__ == "__main__":
    asyncio.run(main(parse()))
