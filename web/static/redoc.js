// The API reference (/redoc): ReDoc, vendored from npm (redoc), over /openapi.json.
window.addEventListener("DOMContentLoaded", function () {
  Redoc.init("/openapi.json", { hideDownloadButton: false }, document.getElementById("redoc"));
});
