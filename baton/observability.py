"""Tracing and metrics: to an OTLP collector, to Azure Monitor, or off.

Kept apart from `baton.telemetry`, which every layer imports. Which exporter is used is decided
once per process, by the first `configure_telemetry` call (OpenTelemetry's global providers can be
set only once):

- `APPLICATIONINSIGHTS_CONNECTION_STRING` set: Azure Monitor's distro (`configure_azure_monitor`,
  from the optional `azure` extra: `pip install 'baton[azure]'`) sets up traces, metrics and logs
  for Application Insights; an OTLP endpoint is then not used.
- else `OTEL_EXPORTER_OTLP_ENDPOINT` set: traces and metrics go to it over OTLP/HTTP (protobuf; a
  collector's port 4318), to `<endpoint>/v1/traces` and `<endpoint>/v1/metrics`. The exporters
  still read the standard `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_BSP_*` and `OTEL_METRIC_EXPORT_*`
  variables themselves.
- neither: both are switched off, MAF's instrumentation too, and Baton's spans are not made at
  all (see `_switch_off`).

Either way on, MAF's own instrumentation stays on (`invoke_workflow …`, `executor.process …`,
`invoke_agent …`, `chat …`, `execute_tool …`), and `OTEL_SERVICE_NAME` names the process (default
`baton`; the Azure deployment names its apps `baton-web` and `baton-worker`).

Baton's own spans come from the tracer named `baton` (`opentelemetry.trace.get_tracer("baton")`,
through `baton.telemetry.span`):

- `baton.start`: the first drive of a run, to its first pause or its end. Attributes
  `baton.run_id`, `baton.workflow`.
- `baton.resume`: a drive that delivers one answer to a paused run. Also `baton.request_id`
  (the answered request) and `baton.decision`.
- `baton.pause`: the commit of a pause (checkpoint, requests and audit in one transaction), inside
  the drive's span. `baton.run_id`, `baton.workflow`, `baton.request_ids` (the new requests),
  `baton.committed` (False: fenced off, another process moved the run on).
- `baton.answer`: `RequestService.respond`. `baton.request_id`, `baton.run_id`, `baton.decision`,
  `baton.outcome` (`closed`, `partial`, `repeated`); a refusal (403, 409, 410, 422) ends the span
  with the error recorded.
- `baton.effect`: `EffectLedger.perform`, inside the drive that ran the tool. `baton.run_id`,
  `baton.tool`, `baton.idempotency_key`, `baton.replayed` (this drive or the ledger had the result).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from baton.settings import Settings
from baton.telemetry import spans_off

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource

logger = logging.getLogger(__name__)

_decided: str | None = None

AZURE_EXTRA_MISSING = (
    "APPLICATIONINSIGHTS_CONNECTION_STRING is set, but azure-monitor-opentelemetry is not "
    "installed: install Baton with its azure extra (pip install 'baton[azure]'), or unset "
    "APPLICATIONINSIGHTS_CONNECTION_STRING"
)


def configure_telemetry(settings: Settings) -> str:
    """Set tracing and metrics up as `settings` say; the first call in a process decides.

    Returns:
        What this process exports to: `"azure-monitor"`, `"otlp"` or `"off"`.

    Raises:
        ImportError: Azure Monitor is configured but the `azure` extra is not installed.
    """
    global _decided
    if _decided is not None:
        return _decided
    connection_string = settings.applicationinsights_connection_string
    if connection_string is not None and connection_string.get_secret_value().strip():
        _configure_azure_monitor(connection_string.get_secret_value(), settings)
        _decided = "azure-monitor"
    elif settings.otel_exporter_otlp_endpoint:
        _configure_otlp(settings.otel_exporter_otlp_endpoint, settings)
        _decided = "otlp"
    else:
        _switch_off()
        _decided = "off"
        return _decided
    from agent_framework.observability import enable_instrumentation

    enable_instrumentation()
    logger.info(
        "telemetry configured",
        extra={"exporter": _decided, "service_name": settings.otel_service_name},
    )
    return _decided


def _resource(settings: Settings) -> Resource:
    from importlib.metadata import version

    from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource

    return Resource.create(
        {SERVICE_NAME: settings.otel_service_name, SERVICE_VERSION: version("baton")}
    )


def _configure_azure_monitor(connection_string: str, settings: Settings) -> None:
    try:
        from azure.monitor.opentelemetry import configure_azure_monitor
    except ImportError as exc:
        raise ImportError(AZURE_EXTRA_MISSING) from exc
    configure_azure_monitor(connection_string=connection_string, resource=_resource(settings))


def _configure_otlp(endpoint: str, settings: Settings) -> None:
    from opentelemetry import metrics, trace
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    base = endpoint.rstrip("/")
    resource = _resource(settings)
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{base}/v1/traces"))
    )
    trace.set_tracer_provider(tracer_provider)
    reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=f"{base}/v1/metrics"))
    metrics.set_meter_provider(MeterProvider(resource=resource, metric_readers=[reader]))


def _switch_off() -> None:
    """Switch metrics, MAF's spans and Baton's off: nothing would record them.

    With no meter provider set, OpenTelemetry's proxy keeps every instrument ever created, and MAF
    creates several per agent, client and tool: since Baton builds those afresh on every drive
    of a run, that kept about 4 KB per drive for good. MAF's spans, on by default, cost a few
    milliseconds per agent call with nothing recording them. Baton's own are not made at all
    (`baton.telemetry.spans_off`), unless the host process has set a tracer provider of its own
    already; one it sets later gets none of Baton's spans.
    """
    from agent_framework.observability import disable_instrumentation
    from opentelemetry import trace
    from opentelemetry.metrics import NoOpMeterProvider, set_meter_provider

    set_meter_provider(NoOpMeterProvider())
    disable_instrumentation()
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        spans_off()  # no provider yet: a host that set its own keeps Baton's spans
