"""Tracing and metrics switches (kept apart from `baton.telemetry`, which every layer imports)."""

from __future__ import annotations


def configure_telemetry(*, otlp_endpoint: str | None) -> None:
    """Trace and meter only when an OTLP endpoint is configured; otherwise switch both off.

    With no meter provider set, OpenTelemetry's proxy keeps every instrument ever created, and MAF
    creates several per agent, client and tool: since Baton builds those afresh on every drive
    of a run, that kept about 4 KB per drive for good. MAF's spans, on by default, cost a few
    milliseconds per agent call with nothing recording them.
    """
    if otlp_endpoint:
        return
    from agent_framework.observability import disable_instrumentation
    from opentelemetry.metrics import NoOpMeterProvider, set_meter_provider

    set_meter_provider(NoOpMeterProvider())
    disable_instrumentation()
