"""`tocsin api`: the HTTP API alone, for deployments that run workers apart (PostgreSQL).

With `--workers N` it runs N API processes on one listening socket: the API keeps no state
of its own (everything is in the database; each process has its own store and pool, and its
own short-lived key cache), so one core's worth of Python per process is the only limit. The
parent checks the database once, binds the port, forks the processes, and then only watches
them: SIGTERM or SIGINT to it stops them all gracefully (a second signal stops them at once);
if one dies, it stops the others and exits 1, for the supervisor (systemd, Kubernetes) to
restart. `tocsin serve` stays one process: it runs the scheduler, which must not run twice
beside one API. Each process's metrics are written to files in a directory the parent makes
for the run and removes at the end, so that `/metrics` from any one of them counts them all
(`tocsin.metrics.exposition`).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import logging
import os
import signal
import socket
import sys
from types import FrameType
from typing import Any

import uvicorn

from tocsin.cli.serve import add_server_arguments, check_auth, serve, serve_api
from tocsin.cli.startup import StartupError, open_ready_store, run_async, settings_from
from tocsin.logging import configure_logging
from tocsin.metrics import exposition
from tocsin.settings import Settings

log = logging.getLogger("tocsin.api")
_PR_SET_PDEATHSIG = 1  # prctl(2): signal this process when its parent dies


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "api",
        help="run the HTTP API without the scheduler",
        description="Run the HTTP API only; run `tocsin worker` processes to ring reminders. "
        "On PostgreSQL it refuses an old schema unless given --migrate.",
    )
    add_server_arguments(parser)
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="API processes sharing the port (default 1; about one per core)",
    )
    parser.set_defaults(handler=run_api)


def run_api(args: argparse.Namespace) -> int:
    if args.workers < 1:
        print("tocsin: --workers must be 1 or more", file=sys.stderr)
        return 2
    if args.workers == 1:
        return serve(args, services=[])
    return serve_processes(args, args.workers)


def serve_processes(args: argparse.Namespace, count: int) -> int:
    """Run `count` API processes on one socket until stopped; the exit status."""
    settings = settings_from(args)
    configure_logging(settings.log_level, settings.log_format)
    try:
        run_async(_prepare(settings, migrate=args.migrate))
        listening = _bind(settings)
    except (StartupError, OSError) as error:
        log.error("not starting: %s", error)
        print(f"tocsin: {error}", file=sys.stderr)
        return 1
    # Their metrics are kept in files of this run's own, which any of them reads for a scrape.
    with exposition.multiprocess():
        children = [_fork(settings, listening) for _ in range(count)]
        log.info("API processes started", extra={"processes": count, "pids": children})
        return _watch(children)


async def _prepare(settings: Settings, *, migrate: bool) -> None:
    """What every process would check, checked once: the schema (migrated when asked) and
    that listening beyond loopback has keys."""
    store = await open_ready_store(settings, migrate=migrate)
    try:
        await check_auth(store, settings.host)
    finally:
        await store.close()


def _bind(settings: Settings) -> socket.socket:
    config = uvicorn.Config("tocsin.api:create_app", host=settings.host, port=settings.port)
    listening = config.bind_socket()
    listening.set_inheritable(True)
    return listening


def _fork(settings: Settings, listening: socket.socket) -> int:
    pid = os.fork()
    if pid:
        return pid
    # The child: its own process group, so a Ctrl-C reaches the parent alone (which passes
    # one SIGTERM on), and a SIGTERM of its own should the parent die without one.
    os.setpgid(0, 0)
    _die_with_parent()
    status = 0
    try:
        run_async(serve_api(settings, [], migrate=False, sockets=[listening], check_keys=False))
    except BaseException:
        log.exception("API process failed")
        status = 1
    finally:
        logging.shutdown()
        os._exit(status)


def _die_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() == 1:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _watch(children: list[int]) -> int:
    """Pass SIGTERM/SIGINT on to the children; wait for all to exit. 0 when they were told
    to stop, 1 when one stopped by itself (the others are then stopped too)."""
    running = set(children)
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        _signal(running, signal.SIGTERM)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)
    status = 0
    while running:
        pid, code = os.wait()
        running.discard(pid)
        if not stopping:
            log.error("an API process exited; stopping the others", extra={"pid": pid})
            stopping, status = True, 1
            _signal(running, signal.SIGTERM)
        elif os.waitstatus_to_exitcode(code) not in (0, -signal.SIGTERM):
            status = 1
    return status


def _signal(pids: set[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # exited meanwhile
            os.kill(pid, sig)
