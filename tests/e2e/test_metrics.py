"""Metrics and health of live processes on PostgreSQL: `tocsin api --workers 2` and a
`tocsin worker --metrics-port` are scraped during a small burst, their health answered, and
the dashboard's and alert rules' metric names found on them; the rules load in promtool."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from tests.e2e.workers import ENV, clock, query, wait_all_sent, workers
from tests.integration.engine.support import eventually
from tests.support.processes import clean_env, free_port, running
from tocsin.store.migrations import migrations_for

DEPLOY = Path(__file__).parents[2] / "deploy"
RULES = DEPLOY / "prometheus" / "alerts.yml"
DASHBOARD = DEPLOY / "grafana" / "tocsin.json"
RINGS = 120


def test_the_alert_rules_load_in_promtool() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        missing = "promtool is missing: apt-get install prometheus (.ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    checked = subprocess.run(
        [promtool, "check", "rules", str(RULES)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS" in checked.stdout


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_a_live_api_and_worker_count_a_burst_and_say_when_not_ready(
    pg_migrated_url: str, tmp_path: Path
) -> None:
    url = pg_migrated_url
    metrics_port = free_port()
    api_env = clean_env(**ENV, TMPDIR=str(tmp_path))  # the API's metrics files go there
    with (
        running("api", "--workers", "2", "--db", url, env=api_env, log=tmp_path / "api.log")
        as (api, _),
        workers(tmp_path) as started,
    ):  # fmt: skip
        started.start(url, "w1", "--null-channels", "--metrics-port", str(metrics_port))
        worker = f"http://127.0.0.1:{metrics_port}"
        async with httpx.AsyncClient(timeout=10) as http:
            await eventually(lambda: _answers(http, f"{worker}/readyz"), within=20, every=0.2)
            assert _metrics_directories(tmp_path), "the API made a directory for its run"

            await _burst(http, api)
            await wait_all_sent(url, RINGS, within=30)
            worker_text = (await http.get(f"{worker}/metrics")).text
            api_texts = [(await http.get(f"{api}/metrics")).text for _ in range(6)]

            _check_worker(worker_text)
            _check_api(api_texts)
            _check_names_exist([worker_text, *api_texts])
            await _check_not_ready_while_the_schema_is_behind(http, url, api, worker)
    assert not _metrics_directories(tmp_path), "the API removed its run's metrics files"


async def _answers(http: httpx.AsyncClient, url: str) -> bool:
    try:
        return (await http.get(url)).status_code == 200
    except httpx.TransportError:
        return False


def _metrics_directories(folder: Path) -> list[Path]:
    return list(folder.glob("tocsin-metrics-*"))


async def _burst(http: httpx.AsyncClient, api: str) -> None:
    """RINGS one-offs due within a few seconds, saved through the API in batches."""
    due = clock.now().replace(microsecond=0) + timedelta(seconds=3)
    items = [
        {
            "owner": f"owner-{n}",
            "text": "burst",
            "at": (due + timedelta(seconds=n % 2)).isoformat().replace("+00:00", "Z"),
            "zone": "UTC",
            "channel": "log",
        }
        for n in range(RINGS)
    ]
    for start in range(0, RINGS, 40):
        answer = await http.post(
            f"{api}/v1/reminders:batch", json={"items": items[start : start + 40]}
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["created"] == 40


def _samples(text: str) -> list[Sample]:
    return [s for family in text_string_to_metric_families(text) for s in family.samples]


def _value(samples: Iterable[Sample], name: str, **labels: str) -> float:
    return sum(s.value for s in samples if s.name == name and labels.items() <= s.labels.items())


def _check_worker(text: str) -> None:
    samples = _samples(text)
    assert _value(samples, "tocsin_rings_total", channel="log", outcome="sent") == RINGS
    assert _value(samples, "tocsin_ring_lateness_seconds_count") == RINGS
    assert _value(samples, "tocsin_ring_lateness_seconds_bucket", le="+Inf") == RINGS
    assert 0 < _value(samples, "tocsin_ring_lateness_seconds_sum") < RINGS * 5
    assert _value(samples, "tocsin_claims_total", result="claimed") == RINGS
    assert _value(samples, "tocsin_claim_batch_size_sum") == RINGS
    assert _value(samples, "tocsin_claim_seconds_count") >= 1
    assert _value(samples, "tocsin_parts_held", worker="w1") == 4
    assert _value(samples, "tocsin_parts") == 4
    assert _value(samples, "tocsin_queue_depth", state="sending") == 0
    assert any(s.name == "tocsin_oldest_unclaimed_seconds" for s in samples)


def _check_api(texts: list[str]) -> None:
    # Either API process may answer a scrape; each answers for both.
    for text in texts:
        samples = _samples(text)
        created = _value(
            samples,
            "tocsin_http_requests_total",
            method="POST",
            route="/v1/reminders:batch",
            status="200",
        )
        assert created == RINGS // 40
        timed = _value(
            samples,
            "tocsin_http_request_duration_seconds_count",
            method="POST",
            route="/v1/reminders:batch",
        )
        assert timed == RINGS // 40
        assert any(s.name == "tocsin_oldest_unclaimed_seconds" for s in samples)


def _check_names_exist(texts: list[str]) -> None:
    """Every `tocsin_…` name the dashboard and the alert rules use is exported (declared,
    with or without samples yet) by the API or the worker."""
    exported: set[str] = set()
    for text in texts:
        for family in text_string_to_metric_families(text):
            exported.add(family.name)
            if family.type == "counter":
                exported.add(f"{family.name}_total")
            exported.update(sample.name for sample in family.samples)
    expressions = [
        rule for rule in RULES.read_text().splitlines() if "expr" in rule or "tocsin_" in rule
    ]
    dashboard = json.loads(DASHBOARD.read_text())
    expressions += [
        target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])
    ]
    used = {name for expression in expressions for name in re.findall(r"\btocsin_\w+", expression)}
    assert len(used) > 10
    assert used <= exported, sorted(used - exported)


async def _check_not_ready_while_the_schema_is_behind(
    http: httpx.AsyncClient, url: str, api: str, worker: str
) -> None:
    # The latest migration this release needs (one that applies after the upgrade it runs
    # with or without).
    needed = max(m.version for m in migrations_for("postgres") if not m.after_upgrade)
    [latest] = await query(
        url, "DELETE FROM schema_migrations WHERE version = $1 RETURNING version, name", needed
    )
    try:
        for base in (api, worker):
            answer = await http.get(f"{base}/readyz")
            assert answer.status_code == 503, (base, answer.text)
            assert "schema" in answer.text
            assert (await http.get(f"{base}/healthz")).status_code == 200
    finally:
        await query(
            url,
            "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
            latest["version"],
            latest["name"],
        )
    for base in (api, worker):
        assert (await http.get(f"{base}/readyz")).status_code == 200
