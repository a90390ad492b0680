// Starts ReDoc on /redoc; a file, not an inline script, so the page's CSP allows 'self' only.
window.addEventListener("load", function () {
  Redoc.init(document.body.dataset.openapi, {}, document.getElementById("redoc"));
});
