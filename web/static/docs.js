// The API docs (/docs): Swagger UI, vendored from npm (swagger-ui-dist), over /openapi.json.
// A file of its own, so the page runs no inline script and keeps the pages' CSP.
window.addEventListener("DOMContentLoaded", function () {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    persistAuthorization: false,
  });
});
