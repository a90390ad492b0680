"""Tocsin's own commands as real processes for the tests: `tocsin …` run to completion, or
a server started on a free port and stopped (SIGTERM) when the block ends."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import httpx

from tests.support.keys import TEST_SECRET_KEY


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def clean_env(*, secret_key: str | None = TEST_SECRET_KEY, **settings: str) -> dict[str, str]:
    """This environment without any `TOCSIN_*` setting of the developer's, plus the tests'
    secret key (none when `secret_key` is None) and `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOCSIN_")}
    if secret_key is not None:
        env["TOCSIN_SECRET_KEY"] = secret_key
    return env | settings


# A hang guard, not a speed bound: a command spends ~0.8 s of CPU (most of it importing), and
# beside four CPU hogs and the parallel test run on two CPUs `keys create`, `keys
# rotate-secrets` and `api` on an old schema each passed 30 s, their work done.
COMMAND_TIMEOUT = 90


def tocsin(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tocsin", *args],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        env=env or clean_env(),
        check=False,
    )


@contextmanager
def running(
    *args: str, env: dict[str, str] | None = None, log: Path | None = None
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`tocsin *args --port P` until the block ends; its output piped, or to the file `log`
    (for a server that logs much: a full pipe would stall it)."""
    port = free_port()
    out: IO[str] | int = subprocess.PIPE if log is None else log.open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "tocsin", *args, "--port", str(port)],
        stdout=out,
        stderr=subprocess.STDOUT,
        text=True,
        env=env or clean_env(),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(base, process, log)
        yield base, process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=15)
        if process.stdout:
            process.stdout.close()
        if not isinstance(out, int):
            out.close()


def _wait_until_up(base: str, process: subprocess.Popen[str], log: Path | None) -> None:
    deadline = time.monotonic() + 60  # a loaded machine can take long to start one
    while time.monotonic() < deadline:
        if process.poll() is not None:
            out = process.stdout.read() if process.stdout else log.read_text() if log else ""
            raise AssertionError(f"the server exited: {out}")
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.05)
    raise AssertionError("the server did not come up")


def kill_strays(folder: Path) -> list[int]:
    """SIGKILL every process still running whose environment names `folder` (a temporary
    folder made for one run and handed to it as TMPDIR, which its children inherit, as a
    failover cluster's keepers and servers do in sessions of their own); their pids."""
    marker = str(folder).encode()
    killed = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if any(marker in variable.partition(b"=")[2] for variable in environ):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)
                killed.append(int(entry.name))
    return killed
