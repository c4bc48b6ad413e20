"""Files that come with a request: a chart to review, a photographed receipt, a tool's image.

A workflow's request data and a run's conversation may hold a file as a data URI (MAF's
`Content.from_data`, an app's upload). Pages, messages and records name it in words
(`attachment_text`: "an image (PNG, 198 KB)"), never as its base64; its bytes are kept once,
under their digest (`Kept`, the store's `attachments`), and a request lists what came with it
(`records.Attachment`): whoever may read the request may open each, and no one else.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import unquote_to_bytes

from human.records import Attachment

KEPT_MAX: Final = 10 * 1024 * 1024
"""Bytes of the largest file kept to be opened; a larger one is named in words only."""

LISTED_MAX: Final = 50
"""Files listed and kept of one value (a request's data, a conversation entry's contents)."""

SHOWN_INLINE: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The media types a page shows as they are (an `<img>`); any other file is downloaded, never
rendered by the browser in Baton's origin (an SVG or an HTML file could hold a script)."""

THE_REQUEST: Final = "the request"
"""Where a file came that the workflow's request data holds (`records.Attachment.source`)."""

ID: Final = re.compile(r"[0-9a-f]{64}")
"""An attachment's id: the SHA-256 of its bytes, in lowercase hex."""

_DATA_URI: Final = re.compile(
    r"data:(?P<type>[\w.+-]+/[\w.+-]+)?(?P<params>(;[^,;]*)*?),(?P<data>.*)", re.DOTALL
)
_KINDS: Final = {
    "image": "an image",
    "audio": "an audio clip",
    "video": "a video",
    "text": "a text file",
}
_DOCUMENTS: Final = frozenset({"application/pdf", "application/msword"})


def attachment_text(value: Any) -> str | None:
    """A data URI (an image, a PDF a message holds) in words: `an image (PNG, 198 KB)`; else None.

    What a page, a message or a record shows of it instead of its base64: a person reads the
    kind and the size, not the bytes.
    """
    if not isinstance(value, str) or not value.startswith("data:"):
        return None
    found = _DATA_URI.fullmatch(value)
    if found is None:
        return None
    data = found.group("data")
    if ";base64" in found.group("params").lower():
        size = len(data.rstrip("=")) * 3 // 4
    else:
        size = len(data.encode())
    return words(_media_type(found), size)


def words(media_type: str, size: int) -> str:
    """A file in words, by its kind and size: `a document (PDF, 59 KB)`."""
    kind, name = _kind(media_type)
    return f"{kind} ({name}, {size_text(size)})"


def content_words(content: Mapping[str, Any]) -> str | None:
    """An attached content (MAF's `Content.to_dict()`) in words; None if it is no attachment.

    Its bytes by kind and size (`an image (PNG, 198 KB)`), a link by kind and where it points
    (`an image (PNG) at https://…`), a file a model provider keeps by its id.
    """
    uri, content_type = content.get("uri"), content.get("type")
    if (said := attachment_text(uri)) is not None:
        return said
    if content_type == "uri" and isinstance(uri, str) and uri:
        media_type = content.get("media_type")
        return linked_words(media_type if isinstance(media_type, str) else None, uri)
    if content_type == "hosted_file":
        return f"a hosted file ({content.get('file_id')})"
    return None


def linked_words(media_type: str | None, uri: str) -> str:
    """A file at a link in words, by its kind: `an image (PNG) at https://…`, `a file at …`."""
    if not media_type:
        return f"a file at {uri}"
    kind, name = _kind(media_type)
    return f"{kind} ({name}) at {uri}"


def _kind(media_type: str) -> tuple[str, str]:
    """A media type's kind of file and its name: `("an image", "PNG")`."""
    main, _, sub = media_type.partition("/")
    kind = "a document" if media_type in _DOCUMENTS else _KINDS.get(main, "a file")
    return kind, sub.upper() if kind != "a file" else media_type


def size_text(size: int) -> str:
    """A number of bytes as a person reads it: `812 bytes`, `198 KB`, `2.4 MB`."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def _media_type(found: re.Match[str]) -> str:
    return (found.group("type") or "text/plain").lower()


@dataclass(frozen=True)
class Kept:
    """A file's bytes, kept under their digest (`id`)."""

    id: str
    media_type: str
    data: bytes

    def about(self, source: str) -> Attachment:
        """What a request lists of it: `source` says where it came ("the request", ...)."""
        size = len(self.data)
        name = words(self.media_type, size)
        return Attachment(
            id=self.id, media_type=self.media_type, size=size, name=name, source=source
        )


def decoded(uri: str) -> Kept | None:
    """The file a data URI holds; None for anything else, a malformed one, or one too large."""
    found = _DATA_URI.fullmatch(uri) if uri.startswith("data:") else None
    if found is None:
        return None
    data = found.group("data")
    if ";base64" in found.group("params").lower():
        if len(data) > KEPT_MAX * 4 // 3 + 4:
            return None
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return None
    else:
        raw = unquote_to_bytes(data)
    if len(raw) > KEPT_MAX:
        return None
    return Kept(hashlib.sha256(raw).hexdigest(), _media_type(found), raw)


def found_in(value: Any) -> list[Kept]:
    """The files (data URIs) anywhere in `value` (JSON), once each, in the order they come.

    The first `LISTED_MAX`: any more are named in words only.
    """
    kept: dict[str, Kept] = {}
    for uri in _data_uris(value):
        if (file := decoded(uri)) is not None:
            kept.setdefault(file.id, file)
            if len(kept) == LISTED_MAX:
                break
    return list(kept.values())


def _data_uris(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if value.startswith("data:"):
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _data_uris(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _data_uris(item)


def in_brief(files: list[Attachment]) -> str | None:
    """What came with a request, in a list's few words: the one file's name, else how many."""
    if not files:
        return None
    return files[0].name if len(files) == 1 else f"{len(files)} files"


PREFIX_MIN: Final = 8
"""The fewest characters of a file's id that name it, where its request lists no other so."""


def named(files: list[Attachment], given: str) -> Attachment | None:
    """The file `given` names among `files`; None where it names none, or several.

    `given` is its id, or a beginning of it (`PREFIX_MIN` or more characters) no other id shares.
    """
    given = given.strip().lower()
    if len(given) < PREFIX_MIN:
        return None
    found = [a for a in files if a.id.startswith(given)]
    return found[0] if len(found) == 1 else None


def merged(*lists: list[Attachment]) -> list[Attachment]:
    """Attachments once each (by id), the first mention kept, in order."""
    seen: dict[str, Attachment] = {}
    for attachments in lists:
        for a in attachments:
            seen.setdefault(a.id, a)
    return list(seen.values())
