"""Non-text content (images, PDFs) in what Baton shows and keeps: named in words, never dumped as
base64 on a page, never dropped; a tool's image reaches the model again in a continued run."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from agent_framework import Content, Message

from executors.platform.shown import maf_value
from executors.platform.transcript import Transcript, messages_of, tool_result
from human.attachments import linked_words
from human.typed import as_json
from web.templating import templates
from web.views import _message

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 800  # 204,808 bytes
PDF = b"%PDF-1.4\n" + b"x" * 60_000
BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{200,}")


def uri(data: bytes, media_type: str) -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


def test_a_data_uri_is_named_by_its_kind_and_size() -> None:
    from human.summary import attachment_text

    assert attachment_text(uri(PNG, "image/png")) == "an image (PNG, 200 KB)"
    assert attachment_text(uri(PDF, "application/pdf")) == "a document (PDF, 59 KB)"
    assert attachment_text("data:text/plain,hello") == "a text file (PLAIN, 5 bytes)"
    assert attachment_text("https://example.com/a.png") is None


def test_a_message_s_attachments_are_named_not_dropped_nor_dumped() -> None:
    """A request's data holding an agent's chart: a person sees that there is a chart, and a PDF."""
    chart = Message(
        role="assistant",
        contents=[
            Content.from_text(text="Here is the chart of sales, with the full report."),
            Content.from_data(data=PNG, media_type="image/png"),
            Content.from_data(data=PDF, media_type="application/pdf"),
        ],
    )
    assert as_json(chart, fallback=maf_value) == {
        "role": "assistant",
        "text": "Here is the chart of sales, with the full report.",
        "attachments": ["an image (PNG, 200 KB)", "a document (PDF, 59 KB)"],
    }
    only_image = Message(role="assistant", contents=[Content.from_data(PNG, "image/png")])
    shown = as_json(only_image, fallback=maf_value)
    assert shown == {"role": "assistant", "contents": ["an image (PNG, 200 KB)"]}
    assert not BASE64_RUN.search(str(as_json([only_image], fallback=maf_value)))


def test_a_file_at_a_link_is_named_by_its_kind_and_its_link() -> None:
    """An agent's message pointing at a photo and a report: a person reads what and where."""
    linked = Message(
        role="assistant",
        contents=[
            Content.from_text(text="The damage, and the carrier's report."),
            Content.from_uri("https://cdn.example.com/damage.jpg", media_type="image/jpeg"),
            Content.from_uri("https://example.com/report.pdf", media_type="application/pdf"),
            Content.from_hosted_file(file_id="file-9f"),
        ],
    )
    assert as_json(linked, fallback=maf_value)["attachments"] == [
        "an image (JPEG) at https://cdn.example.com/damage.jpg",
        "a document (PDF) at https://example.com/report.pdf",
        "a hosted file (file-9f)",
    ]
    assert linked_words(None, "https://example.com/x") == "a file at https://example.com/x"


def test_a_page_shows_a_data_uri_in_words_and_its_json_without_the_bytes() -> None:
    """A run's input holding a photo as a data URI: the request page's conversation shows it."""
    photo = uri(PNG[:40_000], "image/png")
    line = _message(f'input: {{"task": "File this receipt.", "receipt": "{photo}"}}')
    assert line is not None
    page = templates.env.from_string(
        '{% from "_partials/values.html" import conversation %}{{ conversation(messages) }}'
    ).render(messages=[line], page_currency=None)
    assert "an image (PNG, 39 KB)" in page
    assert not BASE64_RUN.search(page), "base64 on the page"


def test_a_tool_s_image_is_handed_to_the_model_again_in_a_continued_run() -> None:
    """As MAF's session keeps it: the call's result holds the image, not its text alone."""
    returned = [Content.from_text("Chart of sales:"), Content.from_data(PNG, "image/png")]
    entries: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "text": "Chart our sales."},
        {
            "type": "tool_call",
            "agent": "ChartAnalyst",
            "tool": "render_chart",
            "call_id": "call-chart",
            "arguments": {"metric": "sales"},
        },
        tool_result("ChartAnalyst", "render_chart", "call-chart", returned),
        {"type": "message", "role": "assistant", "agent": "ChartAnalyst", "text": "Done."},
    ]
    [result] = [c for m in messages_of(entries) for c in m.contents if c.type == "function_result"]
    assert result.result == "Chart of sales:"
    assert [(i.type, i.media_type, i.uri) for i in result.items or ()] == [
        ("text", None, None),
        ("data", "image/png", uri(PNG, "image/png")),
    ]


def test_a_tool_s_image_is_named_where_its_result_is_shown() -> None:
    returned = [Content.from_text("Chart of sales:"), Content.from_data(PNG, "image/png")]
    line = _message(tool_result("ChartAnalyst", "render_chart", "call-chart", returned))
    assert line is not None
    assert line["tool_result"] == "Chart of sales: [an image (PNG, 200 KB)]"


def test_a_tool_s_image_at_a_link_is_named_where_its_result_is_shown() -> None:
    returned = [
        Content.from_text("Photo of the parcel:"),
        Content.from_uri("https://cdn.example.com/parcel.png", media_type="image/png"),
    ]
    line = _message(tool_result("Courier", "parcel_photo", "call-photo", returned))
    assert line is not None
    said = "Photo of the parcel: [an image (PNG) at https://cdn.example.com/parcel.png]"
    assert line["tool_result"] == said


def test_a_tool_s_image_is_listed_for_the_requests_that_follow_and_kept_once() -> None:
    """A request asked after a tool returned an image lists it, from that tool's result; the
    bytes ride on the pause's commit once, however often the conversation holds them."""
    image = Content.from_data(PNG, "image/png")
    transcript = Transcript()
    transcript.add(
        tool_result("ChartAnalyst", "render_chart", "c1", [Content.from_text("A"), image])
    )
    transcript.add(tool_result("ChartAnalyst", "render_chart", "c2", [image]))  # the same again
    transcript.add({"type": "message", "role": "assistant", "text": "Done."})

    [listed] = transcript.attachments()
    assert (listed.name, listed.source) == ("an image (PNG, 200 KB)", "render_chart's result")
    assert list(transcript.kept) == [listed.id]
    assert transcript.kept[listed.id].data == PNG
    # a later drive reads them from the stored entries (JSON), its own kept none
    later = Transcript(json.loads(json.dumps(transcript.entries)))
    assert (later.attachments(), later.kept) == ([listed], {})
