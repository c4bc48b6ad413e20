"""`GET /docs` and `/redoc`: the API's description to browse, over `/openapi.json`, offline.

FastAPI's own docs pages load Swagger UI and ReDoc from a CDN and run an inline script, so on an
isolated network they are blank. These load the vendored copies (`web/static/vendor/`) and a
script file each, under the pages' CSP.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from web.templating import templates

router = APIRouter()


@router.get("/docs", include_in_schema=False, response_class=HTMLResponse)
async def docs(request: Request) -> HTMLResponse:
    """Swagger UI over this server's `/openapi.json`."""
    return templates.TemplateResponse(request, "docs.html")


@router.get("/redoc", include_in_schema=False, response_class=HTMLResponse)
async def redoc(request: Request) -> HTMLResponse:
    """ReDoc over this server's `/openapi.json`."""
    return templates.TemplateResponse(request, "redoc.html")
