"""The files a request came with (`human.attachments`): read from data URIs anywhere in JSON,
each once, by the digest of its bytes; what is not a file (a malformed URI, a link, one too large
to keep) is left alone, whatever the text."""

from __future__ import annotations

import base64
import hashlib

from hypothesis import given
from hypothesis import strategies as st

from human import attachments
from human.attachments import THE_REQUEST, attachment_text, decoded, found_in, named, words

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40


def uri(data: bytes, media_type: str = "image/png") -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


def test_a_data_uri_is_its_bytes_under_their_digest_and_named_as_pages_name_it() -> None:
    kept = decoded(uri(PNG))
    assert kept is not None
    assert (kept.id, kept.media_type, kept.data) == (
        hashlib.sha256(PNG).hexdigest(),
        "image/png",
        PNG,
    )
    about = kept.about(THE_REQUEST)
    assert (about.name, about.size, about.source) == (
        "an image (PNG, 10 KB)",
        len(PNG),
        "the request",
    )
    assert about.name == attachment_text(uri(PNG)) == words("image/png", len(PNG))
    plain = decoded("data:,call%20me%20back")  # no type: text, percent-encoded
    assert plain is not None
    assert (plain.media_type, plain.data) == ("text/plain", b"call me back")


def test_files_are_found_anywhere_once_each_in_the_order_they_come() -> None:
    pdf = b"%PDF-1.4\n" + b"x" * 100
    value = {
        "chart": {"contents": [{"type": "text", "text": "see"}, {"uri": uri(PNG)}]},
        "report": [uri(pdf, "application/pdf"), uri(PNG)],  # the chart's image again
        "link": "https://example.com/a.png",
        "note": "data: not a file",
    }
    assert [(k.media_type, len(k.data)) for k in found_in(value)] == [
        ("image/png", len(PNG)),
        ("application/pdf", len(pdf)),
    ]


def test_a_value_holding_very_many_files_lists_the_first_fifty() -> None:
    many = [uri(i.to_bytes(2, "big"), "application/octet-stream") for i in range(80)]
    found = found_in({"files": many})
    assert [k.data for k in found] == [i.to_bytes(2, "big") for i in range(50)]


def test_what_is_no_file_to_keep_is_left_alone(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    assert decoded("data:image/png;base64,@@not base64@@") is None
    assert decoded("data:image/png;base64") is None  # no comma: no data
    assert decoded("https://example.com/a.png") is None
    monkeypatch.setattr(attachments, "KEPT_MAX", 100)
    assert decoded(uri(bytes(101))) is None  # named in words, not kept
    assert decoded(uri(bytes(100))) is not None


@given(st.text(max_size=300))
def test_no_text_breaks_the_reading_of_files(text: str) -> None:
    for candidate in (text, "data:" + text, "data:image/png;base64," + text):
        kept = decoded(candidate)
        assert kept is None or hashlib.sha256(kept.data).hexdigest() == kept.id
        said = attachment_text(candidate)
        assert said is None or said.endswith(")")
        found_in({"a": [candidate, {"b": candidate}]})


def test_a_file_is_named_by_its_id_or_a_beginning_no_other_id_shares() -> None:
    one, other = (decoded(uri(bytes([n]) * 10)) for n in (1, 2))
    assert one is not None
    assert other is not None
    files = [one.about(THE_REQUEST), other.about(THE_REQUEST)]
    assert named(files, one.id) == files[0]
    assert named(files, one.id[:8].upper()) == files[0]  # (as a person may type it)
    assert named(files, one.id[:7]) is None  # too short to name anything
    assert named(files, "f" * 12) is None
    twin = files[0].model_copy(update={"id": one.id[:10] + "0" * 54})  # shares its first ten
    assert named([files[0], twin], one.id[:10]) is None
