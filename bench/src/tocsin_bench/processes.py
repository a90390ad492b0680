"""The real processes a benchmark runs: `tocsin worker`s, `tocsin serve`/`api`, and the local
webhook receiver; and their peak memory, read from /proc."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

from tocsin.keyring import new_key

STOP_SECONDS = 30.0
# One secret key for every child of this run: they share its throw-away databases.
_SECRET_KEY = new_key()


@dataclass
class Process:
    """A child process this benchmark started, its log file, and its peak RSS so far."""

    name: str
    popen: subprocess.Popen[bytes]
    log: IO[bytes] | None = None
    peak_rss: int = 0  # bytes
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def sample(self) -> int:
        """Read the peak resident set (VmHWM) while the process lives; return it in bytes."""
        self.peak_rss = max(self.peak_rss, peak_rss(self.pid))
        return self.peak_rss

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = STOP_SECONDS) -> int | None:
        """SIGTERM, wait for a graceful exit (SIGKILL after `timeout`); the exit status."""
        if self.alive():
            self.sample()
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(10)
        if self.log is not None:
            self.log.close()
            self.log = None
        if self.popen.stdout is not None:  # a peer's, read for the line saying where it listens
            self.popen.stdout.close()
        return self.popen.returncode


def peak_rss(pid: int) -> int:
    """VmHWM of a live process in bytes (0 when it is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def tocsin_env(database_url: str, **settings: str) -> dict[str, str]:
    """The environment of a Tocsin child: ours without TOCSIN_*, then the settings given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOCSIN_")}
    env["TOCSIN_DATABASE_URL"] = database_url
    env["TOCSIN_SECRET_KEY"] = _SECRET_KEY
    env.setdefault("TOCSIN_LOG_LEVEL", "WARNING")
    # Every benchmark client comes from loopback, thousands of feed pages at once.
    env.setdefault("TOCSIN_CONNECTIONS_PER_ADDRESS", "0")
    for name, value in settings.items():
        env[f"TOCSIN_{name.upper()}"] = value
    return env


def spawn(
    name: str, args: Sequence[str], env: dict[str, str], log_dir: Path, *, python_module: str
) -> Process:
    """Start `python -m <module> <args>` with its output in `<log_dir>/<name>.log`."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log = (log_dir / f"{name}.log").open("wb")
    popen = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", python_module, *args],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    return Process(name=name, popen=popen, log=log)


def start_workers(
    count: int, database_url: str, log_dir: Path, *, null: bool, **settings: str
) -> list[Process]:
    """`count` `tocsin worker` processes on `database_url`."""
    env = tocsin_env(database_url, **settings)
    args = ["worker", "--db", database_url, *(["--null-channels"] if null else [])]
    return [
        spawn(
            f"worker-{n}",
            [*args, "--worker-id", f"bench-worker-{n}"],
            env,
            log_dir,
            python_module="tocsin",
        )
        for n in range(count)
    ]


def start_server(
    command: str,
    database_url: str,
    log_dir: Path,
    *,
    args: Sequence[str] = (),
    **settings: str,
) -> tuple[Process, str]:
    """`tocsin serve` or `tocsin api` (with `args` after the command's own, e.g.
    `--null-channels`) on a free port, once it answers /healthz; its base URL."""
    port = free_port()
    env = tocsin_env(database_url, **settings)
    process = spawn(
        command,
        [command, "--db", database_url, "--port", str(port), *args],
        env,
        log_dir,
        python_module="tocsin",
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, process)
    except BaseException:
        process.stop()
        raise
    return process, base


def wait_healthy(base: str, process: Process, *, within: float = 30.0) -> None:
    give_up = time.monotonic() + within
    while time.monotonic() < give_up:
        if not process.alive():
            raise RuntimeError(f"{process.name} exited with {process.popen.returncode}")
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{process.name} did not answer /healthz within {within} s")


def start_receiver(secret: str, log_dir: Path) -> tuple[Process, str]:
    """`python -m tocsin_bench.receiver` on a free port, checking signatures; its base URL."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log = (log_dir / "receiver.log").open("wb")
    popen = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "tocsin_bench.receiver", "--port", "0", "--secret", secret],
        stdout=subprocess.PIPE,
        stderr=log,
    )
    process = Process(name="receiver", popen=popen, log=log)
    assert popen.stdout is not None
    line = popen.stdout.readline().decode()
    if not line.startswith("listening on "):
        process.stop()
        raise RuntimeError(f"the receiver did not start: {line!r}")
    return process, line.removeprefix("listening on ").strip()


def receiver_stats(base: str) -> dict[str, Any]:
    response = httpx.get(f"{base}/stats", timeout=30)
    response.raise_for_status()
    stats: dict[str, Any] = response.json()
    return stats
