"""A file a request came with (`human.attachments`), as a browser or a client gets it.

An image of a kind browsers show safely (`SHOWN_INLINE`: PNG, JPEG, GIF, WebP) is sent as it is,
to be shown where a page puts it; any other file (a PDF, an SVG, an HTML file) is sent as bytes
to save (`application/octet-stream`, `Content-Disposition: attachment`), never rendered in
Baton's origin. Either way the response is sandboxed (`Content-Security-Policy: sandbox`): what
a workflow was handed runs no script here, whatever its bytes say.
"""

from __future__ import annotations

import mimetypes
from typing import Any, Final

from fastapi import Path
from fastapi.responses import Response

from human.attachments import ID, SHOWN_INLINE, Kept

AttachmentId = Path(
    pattern=ID.pattern,
    description="The file's id: the SHA-256 of its bytes, as the request lists it.",
)

_SANDBOX: Final = "sandbox; default-src 'none'; img-src 'self'; frame-ancestors 'none'"

FILE_RESPONSES: Final[dict[int | str, dict[str, Any]]] = {
    200: {
        "description": "The file's bytes: an image browsers show safely as its own media type, "
        "any other file as `application/octet-stream`, to save.",
        "content": {
            media: {"schema": {"type": "string", "format": "binary"}}
            for media in sorted(SHOWN_INLINE | {"application/octet-stream"})
        },
    }
}


def file_response(kept: Kept) -> Response:
    """The file's bytes, shown (a safe image) or saved (anything else), sandboxed."""
    extension = mimetypes.guess_extension(kept.media_type, strict=False) or ".bin"
    filename = f"attachment-{kept.id[:12]}{extension}"
    shown = kept.media_type in SHOWN_INLINE
    return Response(
        kept.data,
        media_type=kept.media_type if shown else "application/octet-stream",
        headers={
            "content-disposition": f'{"inline" if shown else "attachment"}; filename="{filename}"',
            "content-security-policy": _SANDBOX,
        },
    )
