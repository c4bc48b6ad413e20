"""`GET /docs`: the API's description to browse, Swagger UI over `/openapi.json`, served offline.

FastAPI's own docs pages load Swagger UI and ReDoc from a CDN and run an inline script, so on an
isolated network they are blank. This page loads the vendored Swagger UI
(`web/static/vendor/swagger-ui/`) and a script file of its own, under the pages' CSP.
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
