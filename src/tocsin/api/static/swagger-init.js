// Starts Swagger UI on /docs; a file, not an inline script, so the page's CSP allows 'self' only.
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: document.body.dataset.openapi,
    dom_id: "#swagger-ui",
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    deepLinking: true,
  });
});
