"""Logging as JSON lines, each stamped with the correlation id of its HTTP request or job; spans.

Baton's spans (`span`) come from OpenTelemetry's tracer `baton`. When this process exports
nothing (`baton.observability` finds no exporter configured and calls `spans_off`), a span costs
next to nothing: OpenTelemetry's no-op spans still enter and leave a context each, about 2 % of a
minimal cycle's instructions.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import sys
from collections.abc import Mapping
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any

from opentelemetry import trace
from opentelemetry.util.types import AttributeValue

correlation_id: contextvars.ContextVar[str] = contextvars.ContextVar("correlation_id", default="-")

_tracer = trace.get_tracer("baton")
NO_SPAN: AbstractContextManager[trace.Span] = contextlib.nullcontext(trace.INVALID_SPAN)
"""A span that records nothing, made once (a `nullcontext` can be entered again and again)."""
_spans_on = True


def span(
    name: str, attributes: Mapping[str, AttributeValue] | None = None
) -> AbstractContextManager[trace.Span]:
    """A span of Baton's, current while its block runs; a non-recording one while spans are off."""
    if not _spans_on:
        return NO_SPAN
    return _tracer.start_as_current_span(name, attributes=attributes)


def spans_off() -> None:
    """Nothing records Baton's spans in this process: `span` need not make them."""
    global _spans_on
    _spans_on = False


_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "at": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "correlation_id": getattr(record, "correlation_id", correlation_id.get()),
        }
        line.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD})
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


class _CorrelationFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.correlation_id = correlation_id.get()
        return True


def json_lines(handler: logging.Handler) -> logging.Handler:
    """`handler`, writing records as Baton's JSON lines, each with its `correlation_id`."""
    handler.setFormatter(_JsonFormatter())
    handler.addFilter(_CorrelationFilter())
    return handler


def configure_logging(level: str = "INFO") -> None:
    """Send every logger's records to stderr as JSON lines carrying `correlation_id`."""
    handler = json_lines(logging.StreamHandler(sys.stderr))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("agent_framework", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
