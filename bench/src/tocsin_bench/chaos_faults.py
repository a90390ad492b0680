"""The faults of a chaos run: workers killed with SIGKILL and restarted under new ids, the
local PostgreSQL cluster stopped and started again, and what each left on record."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from tocsin_bench.chaos_plan import KILL_JITTER, Plan, Window
from tocsin_bench.processes import Process
from tocsin_bench.progress import note

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", ""}
PG_COMMAND_TIMEOUT = 120.0


@dataclass
class Crew:
    """The live worker processes, how to start one more, and what happened to them."""

    start: Callable[[str], Process]  # a worker with the given id
    live: list[Process] = field(default_factory=list)
    gone: list[Process] = field(default_factory=list)
    kills: list[dict[str, Any]] = field(default_factory=list)
    exits: list[dict[str, Any]] = field(default_factory=list)  # died unasked
    started: int = 0

    def add(self) -> Process:
        self.started += 1
        worker = self.start(f"chaos-worker-{self.started}")
        self.live.append(worker)
        return worker

    def all(self) -> Iterator[Process]:
        yield from self.live
        yield from self.gone


async def kill_workers(crew: Crew, plan: Plan, rng: random.Random) -> None:
    """Every ~`plan.kill_every` seconds until the last due: SIGKILL a random worker (no lease
    given up, firings in flight left `sending`) and start another with a new id, as a
    supervisor would; a worker that died unasked is restarted and recorded."""
    while time.time() < plan.last_due:
        wait = plan.kill_every * rng.uniform(1 - KILL_JITTER, 1 + KILL_JITTER)
        await asyncio.sleep(min(wait, max(0.0, plan.last_due - time.time())))
        _restart_the_dead(crew)
        if time.time() >= plan.last_due or not crew.live:
            return
        victim = rng.choice(crew.live)
        victim.popen.kill()
        await asyncio.to_thread(victim.popen.wait, 10)
        _retire(crew, victim)
        started = crew.add()
        crew.kills.append({"at": time.time(), "killed": victim.name, "started": started.name})


def _restart_the_dead(crew: Crew) -> None:
    for worker in [w for w in crew.live if not w.alive()]:
        _retire(crew, worker)
        crew.exits.append(
            {"at": time.time(), "worker": worker.name, "status": worker.popen.returncode}
        )
        note(f"chaos: {worker.name} exited on its own ({worker.popen.returncode}); restarting")
        crew.add()


def _retire(crew: Crew, worker: Process) -> None:
    crew.live.remove(worker)
    crew.gone.append(worker)
    worker.stop()  # closes its log


def kill_windows(crew: Crew) -> list[Window]:
    """Each kill, as an instant."""
    return [Window("worker killed", k["at"], k["at"]) for k in crew.kills]


@dataclass(frozen=True)
class Cluster:
    """A local Debian PostgreSQL cluster (`pg_lsclusters`) this run may stop and start."""

    version: str
    name: str
    pg_ctlcluster: str  # its path

    def command(self, action: str) -> list[str]:
        return [self.pg_ctlcluster, "--skip-systemctl-redirect", self.version, self.name, action]


def local_cluster(url: str) -> Cluster | str:
    """The cluster serving `url`, or why this run cannot stop it."""
    parts = urlsplit(url)
    if (parts.hostname or "") not in LOCAL_HOSTS:
        return f"the server ({parts.hostname}) is not on this machine"
    control, lister = shutil.which("pg_ctlcluster"), shutil.which("pg_lsclusters")
    if control is None or lister is None:
        return "pg_ctlcluster is not installed (not a Debian cluster)"
    if os.geteuid() != 0:
        return "stopping a cluster needs root"
    listed = subprocess.run(  # noqa: S603 - the Debian tool found on PATH, fixed arguments
        [lister, "--no-header"], capture_output=True, text=True, check=False
    )
    port = str(parts.port or 5432)
    for line in listed.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[2] == port and fields[3] == "online":
            return Cluster(fields[0], fields[1], control)
    return f"no online cluster listens on port {port}"


class PostgresOutage:
    """Stops the cluster for the planned window, once; `ensure_started` (always called at
    the end) starts it again if the run was cut short while it was down."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.held: Window | None = None
        self._down = False

    async def run(self, plan: Plan) -> None:
        await asyncio.sleep(max(0.0, plan.postgres.start - time.time()))
        note(f"chaos: stopping PostgreSQL {self.cluster.version}/{self.cluster.name}")
        self._down = True
        await _pg_ctl(self.cluster.command("stop"))
        stopped = time.time()
        await asyncio.sleep(max(0.0, plan.postgres.end - stopped))
        await _pg_ctl(self.cluster.command("start"))
        self._down = False
        self.held = Window(plan.postgres.name, stopped, time.time())
        note(f"chaos: PostgreSQL is back after {self.held.end - self.held.start:.1f} s")

    def ensure_started(self) -> None:
        if self._down:
            note("chaos: starting PostgreSQL again (the run stopped while it was down)")
            with contextlib.suppress(subprocess.SubprocessError):
                subprocess.run(  # noqa: S603 - pg_ctlcluster, fixed arguments
                    self.cluster.command("start"), check=False, timeout=PG_COMMAND_TIMEOUT
                )
            self._down = False


async def _pg_ctl(command: list[str]) -> None:
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    output, _ = await asyncio.wait_for(process.communicate(), PG_COMMAND_TIMEOUT)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {output.decode().strip()}")
