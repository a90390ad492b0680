"""A highly available PostgreSQL on this machine, for failover runs: pg_auto_failover's monitor
and two nodes (a primary and its synchronous standby), each its own local instance on a free
port in a temporary folder, every one under its own `pg_autoctl` keeper.

Why pg_auto_failover rather than Patroni: it is three Debian packages' worth of one binary
(`pg_autoctl`) and a PostgreSQL extension, with no consensus store (etcd) to run beside it,
and its nodes are reached by a multi-host URL with `target_session_attrs=read-write`, which
asyncpg speaks, so nothing (HAProxy, a moving address) stands between Tocsin and the primary.

The cluster is made by `deploy/pg_auto_failover/setup.sh`, the steps of the HA guide
(docs/operations.md), on one machine: three ports and data directories instead of three
hosts, the same passwords, rules and SSL. Every Tocsin process connects as the guide's
`tocsin` role with its password.

A node is killed as a machine dies: SIGKILL to its keeper's whole process group, postmaster
and backends included. Killing the postmaster alone is not a failover: its keeper starts
PostgreSQL again within a second, on the same node.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO

import asyncpg

from tocsin.masking import masked
from tocsin_bench.processes import free_port
from tocsin_bench.progress import note

DATABASE = "tocsin"
PG_VERSION = "15"
SETUP = Path(__file__).resolve().parents[3] / "deploy" / "pg_auto_failover" / "setup.sh"
HOST, NETWORK = "127.0.0.1", "127.0.0.1/32"  # three "hosts" on one machine
# The monitor's health checks, tightened from the defaults (a check every 5 s, 2 retries 2 s
# apart, a node unhealthy after 20 s without a report), which put detection at 20-30 s. With
# these a dead primary is noticed within ~3 s; the price is a failover on any 3-second stall
# of a node, so on a real network keep detection above its worst hiccup.
# Then the monitor waits `primary_demote_timeout` (30 s by default) for the old primary to
# demote itself, which an isolated primary does after its keeper's
# `network_partition_timeout` (20 s by default): the promoted standby takes no write before
# that, so two primaries never take writes at once. Both are cut here, keeping the order
# (the old primary demotes itself well before the new one takes writes).
MONITOR_SETTINGS = {
    "pgautofailover.health_check_period": "1000",
    "pgautofailover.health_check_timeout": "1000",
    "pgautofailover.health_check_max_retries": "1",
    "pgautofailover.health_check_retry_delay": "500",
    "pgautofailover.node_considered_unhealthy_timeout": "3000",
    "pgautofailover.primary_demote_timeout": "10000",
}
NODE_SETTINGS = {"timeout.network_partition_timeout": "5"}
START_SECONDS = 120.0
STATE_POLL = 0.25
CHECKPOINT_EVERY = 1.0
_STATES = "SELECT nodename, reportedstate, goalstate FROM pgautofailover.node ORDER BY nodeid"
_EVENTS = """
SELECT eventtime, nodename, reportedstate, goalstate FROM pgautofailover.event
WHERE eventtime >= $1 ORDER BY eventid
"""


def missing() -> str | None:
    """Why no cluster can be made on this machine, or None."""
    if shutil.which("pg_autoctl") is None:
        return "pg_autoctl is not installed (Debian's postgresql-15-auto-failover)"
    if not SETUP.exists():
        return f"{SETUP} is not there (the bench runs from the repository)"
    if not Path(_bindir(), "pg_ctl").exists():
        return f"PostgreSQL {PG_VERSION}'s binaries are not in {_bindir()}"
    if os.geteuid() == 0 and not _has_user("postgres"):
        return "running as root, and there is no `postgres` user to run PostgreSQL as"
    return None


@dataclass
class Node:
    """One PostgreSQL instance and its keeper."""

    name: str
    port: int
    data: Path
    keeper: subprocess.Popen[bytes] | None = None
    log: IO[bytes] | None = None

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"

    def socket(self) -> str:
        """The directory of its Unix socket, where its superuser connects without a
        password (the TCP rules want one)."""
        return (self.data / "postmaster.pid").read_text().splitlines()[4]


@dataclass
class Cluster:
    """The monitor and the nodes; `url` is the multi-host URL every Tocsin process uses."""

    folder: Path
    monitor: Node
    nodes: list[Node] = field(default_factory=list)
    passwords: dict[str, str] = field(
        default_factory=lambda: {
            role: secrets.token_urlsafe(16)
            for role in ("AUTOCTL_NODE_PASSWORD", "REPLICATION_PASSWORD", "TOCSIN_PASSWORD")
        }
    )

    @property
    def url(self) -> str:
        """The guide's TOCSIN_DATABASE_URL: both nodes, the writable one taken."""
        hosts = ",".join(node.address for node in self.nodes)
        password = self.passwords["TOCSIN_PASSWORD"]
        return (
            f"postgresql://tocsin:{password}@{hosts}/{DATABASE}"
            "?target_session_attrs=read-write&sslmode=require"
        )

    def monitor_url(self) -> str:
        password = self.passwords["AUTOCTL_NODE_PASSWORD"]
        return (
            f"postgresql://autoctl_node:{password}@{self.monitor.address}/pg_auto_failover"
            "?sslmode=require"
        )

    def node(self, name: str) -> Node:
        return next(node for node in self.nodes if node.name == name)

    async def start(self) -> None:
        """Make and start the monitor, then the primary, then its standby, each by the
        guide's script and then its keeper; return when the monitor says `primary` and
        `secondary`."""
        await self._setup("monitor", self.monitor)
        self.restart(self.monitor.name)
        await _wait_reachable(self.monitor_url())
        first, second = self.nodes
        await self._setup("node", first)
        self.restart(first.name)
        await self.wait_for({first.name: "single"})
        # pg_basebackup asks for a spread checkpoint (minutes on an idle server); a CHECKPOINT
        # beside it makes that one immediate.
        copying = asyncio.create_task(self._setup("node", second))
        await self._checkpointing(first, until=copying)
        self.restart(second.name)
        await self.wait_for({first.name: "primary", second.name: "secondary"})

    async def states(self) -> dict[str, tuple[str, str]]:
        """Each node's (reported state, goal state), as the monitor holds them."""
        connection = await asyncpg.connect(self.monitor_url(), timeout=5)
        try:
            rows = await connection.fetch(_STATES)
        finally:
            await connection.close()
        return {row["nodename"]: (row["reportedstate"], row["goalstate"]) for row in rows}

    async def primary(self) -> str | None:
        """The node the monitor holds primary now (reported and assigned), if one."""
        for name, (reported, goal) in (await self.states()).items():
            if reported in ("primary", "wait_primary") and reported == goal:
                return name
        return None

    async def wait_for(self, wanted: dict[str, str], within: float = START_SECONDS) -> float:
        """Until each named node reports, and is assigned, its wanted state; when it did."""
        give_up = time.monotonic() + within
        seen: dict[str, tuple[str, str]] = {}
        while time.monotonic() < give_up:
            try:
                seen = await self.states()
            except (OSError, asyncpg.PostgresError):
                seen = {}
            if all(seen.get(name) == (state, state) for name, state in wanted.items()):
                return time.time()
            await asyncio.sleep(STATE_POLL)
        raise RuntimeError(f"the cluster did not reach {wanted} in {within:.0f} s: {seen}")

    async def events(self, since: float) -> list[tuple[float, str, str, str]]:
        """The monitor's state changes since the epoch second `since`: (when, node,
        reported, goal)."""
        connection = await asyncpg.connect(self.monitor_url(), timeout=5)
        try:
            rows = await connection.fetch(_EVENTS, datetime.fromtimestamp(since).astimezone())
        finally:
            await connection.close()
        return [
            (row["eventtime"].timestamp(), row["nodename"], row["reportedstate"], row["goalstate"])
            for row in rows
        ]

    def kill(self, name: str) -> float:
        """SIGKILL the node's keeper and every process of its group (its postmaster and
        backends): the server is gone at once, with no checkpoint or goodbye. When it was."""
        node = self.node(name)
        assert node.keeper is not None
        os.killpg(node.keeper.pid, signal.SIGKILL)
        killed = time.time()
        node.keeper.wait(30)
        node.keeper = None
        _close(node)
        return killed

    def restart(self, name: str) -> None:
        """Start a node's keeper (the monitor's too, by its name): a killed node's finds
        itself demoted, rewinds and follows the new primary."""
        node = self.monitor if name == self.monitor.name else self.node(name)
        node.keeper = self._spawn(node, ["run", "--pgdata", str(node.data)])

    async def switchover(self) -> float:
        """A planned switchover (`pg_autoctl perform switchover`); when it was asked for."""
        asked = time.time()
        await self._autoctl(["perform", "switchover", "--pgdata", str(self.monitor.data)])
        return asked

    def stop(self) -> None:
        """Kill everything it started and remove its folder."""
        for node in [*self.nodes, self.monitor]:
            if node.keeper is not None and node.keeper.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(node.keeper.pid, signal.SIGKILL)
                node.keeper.wait(30)
            _close(node)
        shutil.rmtree(self.folder, ignore_errors=True)

    # -- making it -------------------------------------------------------------------------

    async def _setup(self, step: str, node: Node) -> None:
        """One step of deploy/pg_auto_failover/setup.sh for `node`."""
        settings = MONITOR_SETTINGS if step == "monitor" else NODE_SETTINGS
        env = {
            **self._env(),
            **self.passwords,
            "PGDATA": str(node.data),
            "PGPORT": str(node.port),
            "HOST": HOST,
            "NETWORK": NETWORK,
            "MONITOR": self.monitor.address,
            "NODE_NAME": node.name,
            "PG_BINDIR": _bindir(),
            f"{step.upper()}_SETTINGS": " ".join(f"{k}={v}" for k, v in settings.items()),
        }
        with (self.folder / f"{node.name}.log").open("ab") as log:
            process = await asyncio.create_subprocess_exec(
                *self._as_owner([str(self.folder / SETUP.name), step], program="bash"),
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            status = await asyncio.wait_for(process.wait(), START_SECONDS)
        if status != 0:
            tail = (self.folder / f"{node.name}.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"setup.sh {step} failed for {node.name}: {tail}")

    async def _autoctl(self, args: list[str]) -> None:
        process = await asyncio.create_subprocess_exec(
            *self._as_owner(args),
            env=self._env(),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await asyncio.wait_for(process.communicate(), START_SECONDS)
        if process.returncode != 0:
            command = " ".join(["pg_autoctl", *args[:2]])
            raise RuntimeError(f"{command} failed: {output.decode()[-2000:]}")

    async def _checkpointing(self, node: Node, *, until: asyncio.Task[None]) -> None:
        try:
            while not until.done():
                try:
                    connection = await asyncpg.connect(
                        host=node.socket(), port=node.port, user=superuser(), database=DATABASE
                    )
                    try:
                        await connection.execute("CHECKPOINT")
                    finally:
                        await connection.close()
                except (OSError, IndexError, asyncpg.PostgresError):
                    pass
                await asyncio.wait([until], timeout=CHECKPOINT_EVERY)
        finally:
            if not until.done():
                until.cancel()
        await until

    def _spawn(self, node: Node, args: list[str]) -> subprocess.Popen[bytes]:
        log = (self.folder / f"{node.name}.log").open("ab")
        node.log = log
        # A process group of its own, so that `kill` takes the postmaster and backends too.
        return subprocess.Popen(  # noqa: S603 - pg_autoctl found on PATH, arguments of ours
            self._as_owner(args),
            env=self._env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def _as_owner(self, args: list[str], program: str = "pg_autoctl") -> list[str]:
        command = [shutil.which(program) or program, *args]
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            return ["runuser", "-u", "postgres", "--", *command]
        return command

    def _env(self) -> dict[str, str]:
        home = str(self.folder)
        return {
            **os.environ,
            "PATH": f"{_bindir()}:{os.environ.get('PATH', '')}",
            "PG_CONFIG": str(Path(_bindir(), "pg_config")),
            "XDG_CONFIG_HOME": f"{home}/config",
            "XDG_DATA_HOME": f"{home}/share",
            "XDG_RUNTIME_DIR": f"{home}/run",
            "HOME": home,
        }


def new_cluster() -> Cluster:
    """A cluster in a new temporary folder, on free ports; not started. The guide's script is
    run from a copy in that folder: run as `postgres`, it may not enter the checkout (a
    clone in a folder only its owner reads, as `mktemp -d` makes)."""
    folder = Path(tempfile.mkdtemp(prefix="tocsin-ha-"))
    shutil.copy(SETUP, folder / SETUP.name)
    if os.geteuid() == 0:
        entry = pwd.getpwnam("postgres")
        os.chown(folder, entry.pw_uid, entry.pw_gid)
        os.chown(folder / SETUP.name, entry.pw_uid, entry.pw_gid)
    monitor = Node("monitor", free_port(), folder / "monitor")
    nodes = [Node(name, free_port(), folder / name) for name in ("node1", "node2")]
    return Cluster(folder, monitor, nodes)


async def started_cluster() -> Cluster:
    """A new cluster, started; stopped again if it could not start."""
    cluster = new_cluster()
    note(f"ha: starting a monitor and two nodes in {cluster.folder}")
    try:
        await cluster.start()
    except BaseException:
        cluster.stop()
        raise
    note(f"ha: primary and synchronous standby ready: {masked(cluster.url)}")
    return cluster


async def _wait_reachable(url: str) -> None:
    give_up = time.monotonic() + START_SECONDS
    while True:
        try:
            connection = await asyncpg.connect(url, timeout=5)
        except (OSError, asyncpg.PostgresError, TimeoutError):
            if time.monotonic() > give_up:
                raise
            await asyncio.sleep(STATE_POLL)
            continue
        await connection.close()
        return


def _close(node: Node) -> None:
    if node.log is not None:
        node.log.close()
        node.log = None


def superuser() -> str:
    """The nodes' superuser: initdb names it after the user running it."""
    return "postgres" if os.geteuid() == 0 else getpass.getuser()


def _bindir() -> str:
    return f"/usr/lib/postgresql/{PG_VERSION}/bin"


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True
