"""Baton's spans over a real refund cycle, and the exporters `configure_telemetry` sets up.

OpenTelemetry's global providers can be set once per process, and `configure_telemetry` switches
MAF's instrumentation off for good when nothing exports: so each case runs the cycle (start →
pause → answer → resume → effect, on a real SQLite file) in a child Python process of its own, and
reads back what that process recorded or sent, and the pytest process keeps its providers.

- memory: the child installs an SDK tracer provider with an in-memory exporter and reports every
  finished span.
- otlp: the child calls `configure_telemetry(Settings())` with `OTEL_EXPORTER_OTLP_ENDPOINT` at an
  OTLP/HTTP receiver it runs on loopback, and reports what arrived, decoded from protobuf.
- azure: the same with `APPLICATIONINSIGHTS_CONNECTION_STRING` whose ingestion and live endpoints
  are that receiver; it runs in a network namespace of its own with only loopback, so nothing the
  Azure Monitor distro might call besides (statsbeat, its settings service, the VM metadata
  address) can leave this machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from agent_framework.observability import OtelAttr

from baton.errors import AnswerConflict

REPO = Path(__file__).resolve().parents[2]
# MAF names its run span ("workflow.run" in 1.23, "invoke_workflow <name>" in 1.26)
WORKFLOW_RUN = str(OtelAttr.WORKFLOW_RUN_SPAN)
REFUND_120 = {"order_id": "A-1002", "amount": 120, "reason": "broken"}


# the child's side ---------------------------------------------------------------------------


class _Receiver(http.server.ThreadingHTTPServer):
    """Takes OTLP/HTTP and Application Insights posts on loopback and keeps them."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.posts: list[tuple[str, bytes]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        with self.server.lock:
            self.server.posts.append((self.path, body))
        reply = b""
        if self.path.startswith("/v2.1/track"):
            count = len(json.loads(body)) if body.startswith(b"[") else body.count(b"\n") + 1
            reply = json.dumps(
                {"itemsReceived": count, "itemsAccepted": count, "errors": []}
            ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        return


async def _plain_tool_cycle(db_url: str) -> dict[str, str]:
    """A MAF agent's approved plain tool (`tests.fixtures.plain_effects`), run in MAF's loop."""
    from baton.settings import Settings
    from baton.wiring import open_parts
    from human.store.base import RequestFilter
    from tests.harness import seed
    from workflows.platform import registry

    registry.load("tests.fixtures.plain_effects")
    os.environ["BATON_TEST_EFFECTS"] = str(Path(db_url.removeprefix("sqlite:///")).parent / "sent")
    await seed(db_url)
    async with open_parts(Settings(database_url=db_url), local_worker=False) as parts:
        run = await parts.runtime.start("courier", {"text": "hello"}, actor="sue")
        await parts.worker.run_until_idle()
        [pending] = (await parts.requests.list(RequestFilter(run_id=run.id))).items
        lee = await parts.store.get_user("lee")
        assert lee is not None
        await parts.requests.respond(pending.id, {"decision": "approve"}, responder=lee)
        await parts.worker.run_until_idle()
        done = await parts.runtime.get(run.id)
        assert done.status == "completed", done.error
        return {"run_id": run.id, "request_id": pending.id}


async def _refund_cycle(db_url: str) -> dict[str, str]:
    from baton.settings import Settings
    from baton.wiring import open_parts
    from human.store.base import RequestFilter
    from tests.harness import seed

    await seed(db_url)
    async with open_parts(Settings(database_url=db_url), local_worker=False) as parts:
        runtime, worker, service, store = parts.runtime, parts.worker, parts.requests, parts.store
        run = await runtime.start("refund", REFUND_120, actor="sam")
        await worker.run_until_idle()
        pending = (await service.list(RequestFilter(run_id=run.id, status="pending"))).items
        assert len(pending) == 1, pending
        lee = await store.get_user("lee")
        assert lee is not None
        await service.respond(pending[0].id, {"decision": "approve"}, responder=lee)
        with contextlib.suppress(AnswerConflict):  # a refused answer: its span records the error
            await service.respond(
                pending[0].id, {"decision": "reject", "reason": "changed my mind"}, responder=lee
            )
        await worker.run_until_idle()
        done = await runtime.get(run.id)
        assert done.status == "completed", done.error
        return {"run_id": run.id, "request_id": pending[0].id}


def _span_json(span: Any) -> dict[str, Any]:
    return {
        "name": span.name,
        "span_id": span.context.span_id,
        "parent_id": span.parent.span_id if span.parent else None,
        "attributes": {
            k: list(v) if isinstance(v, tuple) else v for k, v in span.attributes.items()
        },
        "status": span.status.status_code.name,
        "events": [e.name for e in span.events],
    }


def _otlp_spans(posts: list[tuple[str, bytes]]) -> list[dict[str, Any]]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    spans = []
    for path, body in posts:
        if path != "/v1/traces":
            continue
        message = ExportTraceServiceRequest.FromString(body)
        for resource_spans in message.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append(
                        {
                            "name": span.name,
                            "scope": scope_spans.scope.name,
                            "service_name": resource.get("service.name"),
                            "attributes": {
                                a.key: a.value.string_value or a.value.bool_value
                                for a in span.attributes
                            },
                        }
                    )
    return spans


def _azure_items(posts: list[tuple[str, bytes]]) -> list[dict[str, Any]]:
    items = []
    for path, body in posts:
        if path.startswith("/v2.1/track"):
            envelopes = json.loads(body) if body.startswith(b"[") else []
            for envelope in envelopes:
                base = envelope.get("data", {}).get("baseData", {})
                items.append(
                    {
                        "type": envelope.get("data", {}).get("baseType"),
                        "name": base.get("name"),
                        "properties": base.get("properties", {}),
                        "role": envelope.get("tags", {}).get("ai.cloud.role"),
                    }
                )
    return items


def child_main(mode: str, db_url: str, cycle: str = "refund") -> None:
    """Run one refund cycle (or `cycle`'s) with telemetry set up as `mode` says; print what was
    recorded."""
    receiver = _Receiver()
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    if mode == "memory":
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
    else:
        from baton.observability import configure_telemetry
        from baton.settings import Settings

        if mode == "otlp":
            os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.url + "/"
        else:
            os.environ["APPLICATIONINSIGHTS_CONNECTION_STRING"] = (
                "InstrumentationKey=00000000-0000-4000-8000-000000000000;"
                f"IngestionEndpoint={receiver.url}/;LiveEndpoint={receiver.url}/"
            )
        decided = configure_telemetry(Settings(_env_file=None))  # type: ignore[call-arg]
        assert decided == ("otlp" if mode == "otlp" else "azure-monitor"), decided
    cycles = {"refund": _refund_cycle, "plain_tool": _plain_tool_cycle}
    ids = asyncio.run(cycles[cycle](db_url))

    from opentelemetry import metrics, trace

    tracer_provider: Any = trace.get_tracer_provider()
    tracer_provider.force_flush()
    meter_provider: Any = metrics.get_meter_provider()
    if hasattr(meter_provider, "force_flush"):
        meter_provider.force_flush()
    with receiver.lock:
        posts = list(receiver.posts)
    if mode == "memory":
        report: dict[str, Any] = {"spans": [_span_json(s) for s in exporter.get_finished_spans()]}
    elif mode == "otlp":
        metric_posts = sum(1 for path, _ in posts if path == "/v1/metrics")
        report = {"spans": _otlp_spans(posts), "metric_posts": metric_posts}
    else:
        report = {"items": _azure_items(posts)}
    sys.stdout.write(json.dumps(ids | report) + "\n")
    sys.stdout.flush()
    os._exit(0)  # the distro's exit hooks would post again to a receiver that is gone


# the test's side ----------------------------------------------------------------------------


def _run_child(
    mode: str, tmp_path: Path, *, netns: bool = False, cycle: str = "refund"
) -> dict[str, Any]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OTEL_", "APPLICATIONINSIGHTS_", "BATON_", "ENABLE_"))
    }
    env |= {
        "OTEL_SERVICE_NAME": f"baton-{mode}",
        # the distro's extras that would reach for the internet; the namespace blocks them anyway
        "APPLICATIONINSIGHTS_STATSBEAT_DISABLED_ALL": "true",
        "APPLICATIONINSIGHTS_CONTROLPLANE_DISABLED": "true",
        "OTEL_EXPERIMENTAL_RESOURCE_DETECTORS": "otel",
        # the distro samples 5 traces a second by default; this cycle makes more than that
        "OTEL_TRACES_SAMPLER": "always_on",
        "PYTHONPATH": str(REPO),
        "TMPDIR": str(tmp_path),  # the distro keeps unsent telemetry in folders of its own there
    }
    db = f"sqlite:///{tmp_path / 'baton.db'}"
    code = f"from tests.unit.test_otel import child_main; child_main({mode!r}, {db!r}, {cycle!r})"
    command = [sys.executable, "-c", code]
    if netns:
        command = ["unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "-", *command]
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _one(spans: list[dict[str, Any]], name: str) -> dict[str, Any]:
    found = [s for s in spans if s["name"] == name]
    assert len(found) == 1, f"{name}: {len(found)} spans among {sorted(s['name'] for s in spans)}"
    return found[0]


def _ancestors(span: dict[str, Any], spans: list[dict[str, Any]]) -> list[str]:
    by_id = {s["span_id"]: s for s in spans}
    names = []
    while span["parent_id"] in by_id:
        span = by_id[span["parent_id"]]
        names.append(span["name"])
    return names


def test_a_refund_cycle_records_batons_spans_with_their_attributes(tmp_path: Path) -> None:
    report = _run_child("memory", tmp_path)
    spans, run_id, request_id = report["spans"], report["run_id"], report["request_id"]

    start = _one(spans, "baton.start")
    assert start["attributes"] == {"baton.run_id": run_id, "baton.workflow": "refund"}

    pause = _one(spans, "baton.pause")
    assert pause["attributes"] == {
        "baton.run_id": run_id,
        "baton.workflow": "refund",
        "baton.request_ids": [request_id],
        "baton.committed": True,
    }
    assert _ancestors(pause, spans) == ["baton.start"]

    answers = [s for s in spans if s["name"] == "baton.answer"]
    assert [a["attributes"] for a in answers] == [
        {
            "baton.request_id": request_id,
            "baton.run_id": run_id,
            "baton.decision": "approve",
            "baton.outcome": "closed",
        },
        {
            "baton.request_id": request_id,
            "baton.run_id": run_id,
            "baton.decision": "reject",
        },
    ]
    assert [a["status"] for a in answers] == ["UNSET", "ERROR"]
    assert "exception" in answers[1]["events"]

    resume = _one(spans, "baton.resume")
    assert resume["attributes"] == {
        "baton.run_id": run_id,
        "baton.workflow": "refund",
        "baton.request_id": request_id,
        "baton.decision": "approve",
    }

    effect = _one(spans, "baton.effect")
    assert effect["attributes"]["baton.run_id"] == run_id
    assert effect["attributes"]["baton.tool"] == "issue_refund"
    assert effect["attributes"]["baton.idempotency_key"].startswith("bk_")
    assert effect["attributes"]["baton.replayed"] is False
    assert "baton.resume" in _ancestors(effect, spans)

    # MAF's own spans run inside Baton's drive spans: one trace per drive
    maf_under_resume = [s for s in spans if "baton.resume" in _ancestors(s, spans)]
    assert any(s["name"].startswith(WORKFLOW_RUN) for s in maf_under_resume), [
        s["name"] for s in maf_under_resume
    ]
    assert any(s["name"].startswith("invoke_agent") for s in maf_under_resume)


def test_an_approved_maf_tool_call_is_one_effect_span_and_its_hand_on_no_failure(
    tmp_path: Path,
) -> None:
    report = _run_child("memory", tmp_path, cycle="plain_tool")
    effects = [s for s in report["spans"] if s["name"] == "baton.effect"]

    # decided where the approval is answered, the call is handed on to MAF's tool loop, where
    # it runs: two spans of its key, neither a failure, one of them the tool's run
    assert {s["attributes"]["baton.tool"] for s in effects} == {"send_note"}
    assert len({s["attributes"]["baton.idempotency_key"] for s in effects}) == 1
    assert [s["status"] for s in effects] == ["UNSET", "UNSET"]
    assert [s["events"] for s in effects] == [[], []]
    handed, ran = effects
    assert handed["attributes"]["baton.handed_on"] is True
    assert "baton.handed_on" not in ran["attributes"]
    by_id = {s["span_id"]: s for s in report["spans"]}

    def under(span: dict[str, Any], ancestor: dict[str, Any]) -> bool:
        while span["parent_id"] in by_id:
            span = by_id[span["parent_id"]]
            if span["span_id"] == ancestor["span_id"]:
                return True
        return False

    tools = [s for s in report["spans"] if s["name"].startswith("execute_tool")]
    assert [under(s, ran) for s in tools] == [True]  # the tool ran in the second span
    assert [under(s, handed) for s in tools] == [False]


def test_an_otlp_endpoint_gets_batons_and_mafs_spans_and_metrics(tmp_path: Path) -> None:
    report = _run_child("otlp", tmp_path)
    spans = report["spans"]
    names = {s["name"] for s in spans}

    assert {"baton.start", "baton.pause", "baton.answer", "baton.resume", "baton.effect"} <= names
    assert any(n.startswith(WORKFLOW_RUN) for n in names), names  # MAF's instrumentation is on
    assert any(n.startswith("chat") for n in names), names
    assert {s["service_name"] for s in spans} == {"baton-otlp"}
    pause = next(s for s in spans if s["name"] == "baton.pause")
    assert pause["scope"] == "baton"
    assert pause["attributes"]["baton.run_id"] == report["run_id"]
    assert report["metric_posts"] >= 1


def test_application_insights_gets_batons_spans_through_azure_monitor(tmp_path: Path) -> None:
    pytest.importorskip("azure.monitor.opentelemetry")
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("needs unshare and ip to keep the distro off the network")
    report = _run_child("azure", tmp_path, netns=True)
    items = report["items"]
    by_name = {i["name"]: i for i in items if i["name"]}

    for name in ("baton.start", "baton.pause", "baton.answer", "baton.resume", "baton.effect"):
        assert name in by_name, sorted(by_name)
    assert by_name["baton.resume"]["properties"]["baton.request_id"] == report["request_id"]
    assert by_name["baton.pause"]["role"] == "baton-azure"
    assert any(n.startswith("invoke_agent") for n in by_name), sorted(by_name)


def _python(code: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -c code` in a fresh process with no telemetry settings of this one's, plus `env`."""
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "APPLICATIONINSIGHTS_"))
    }
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env={**clean, **env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_azure_monitor_without_its_extra_is_a_clear_error(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "sys.modules['azure.monitor.opentelemetry'] = None  # as if the extra were not installed\n"
        "from baton.observability import configure_telemetry\n"
        "from baton.settings import Settings\n"
        "configure_telemetry(Settings(_env_file=None))\n"
    )
    done = _python(code, tmp_path, APPLICATIONINSIGHTS_CONNECTION_STRING="InstrumentationKey=x")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: APPLICATIONINSIGHTS_CONNECTION_STRING is set"), last
    assert "pip install 'baton[azure]'" in last


def test_a_tracer_provider_the_host_set_keeps_batons_spans_with_no_exporter(
    tmp_path: Path,
) -> None:
    code = (
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n"
        "exporter = InMemorySpanExporter()\n"
        "provider = TracerProvider()\n"
        "provider.add_span_processor(SimpleSpanProcessor(exporter))\n"
        "trace.set_tracer_provider(provider)\n"
        "from baton.observability import configure_telemetry\n"
        "from baton.settings import Settings\n"
        "print(configure_telemetry(Settings(_env_file=None)))\n"
        "from baton.telemetry import span\n"
        "with span('baton.probe', {'baton.run_id': 'r1'}):\n"
        "    pass\n"
        "print([(s.name, dict(s.attributes)) for s in exporter.get_finished_spans()])\n"
    )
    done = _python(code, tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.splitlines() == ["off", "[('baton.probe', {'baton.run_id': 'r1'})]"]


def test_no_exporter_switches_telemetry_off(tmp_path: Path) -> None:
    code = (
        "from agent_framework.observability import OBSERVABILITY_SETTINGS\n"
        "from opentelemetry import metrics\n"
        "from baton.observability import configure_telemetry\n"
        "from baton.settings import Settings\n"
        "print(configure_telemetry(Settings(_env_file=None)))\n"
        "print(OBSERVABILITY_SETTINGS.enable_instrumentation)\n"
        "print(type(metrics.get_meter_provider()).__name__)\n"
        "from baton.telemetry import span\n"
        "print(type(span('baton.probe')).__name__)\n"  # not made at all: no context entered
    )
    done = _python(code, tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.split() == ["off", "False", "NoOpMeterProvider", "nullcontext"]
