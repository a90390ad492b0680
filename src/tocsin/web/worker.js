// The page's service worker: shows a ring as a notification with the actions it offers
// (Done, Snooze 10 min) and, when one is tapped, posts that action's link.
//
// A ring reaches it two ways: a Web Push message (the webpush channel's payload, for a
// browser subscribed with this worker's registration) or the page itself, which shows the
// in-app feed's rings through this registration so that they get the same buttons. Either
// way the ring carries `actions`: [{action, title, url}], each url a signed link that needs
// no credential (POST /v1/actions/{token}). A tap on the notification itself opens the page.

self.addEventListener("push", (event) => {
  let ring = null;
  try {
    ring = event.data ? event.data.json() : null;
  } catch {
    return; // not a ring of ours
  }
  if (!ring || typeof ring.text !== "string") return;
  event.waitUntil(self.registration.showNotification("Tocsin", options(ring)));
});

self.addEventListener("notificationclick", (event) => {
  const ring = event.notification.data || {};
  const chosen = (ring.actions || []).find((offered) => offered.action === event.action);
  event.notification.close();
  if (!chosen) {
    event.waitUntil(self.clients.openWindow("/"));
    return;
  }
  // No body and no credential: the link is its own. A refused one (expired, say) is
  // answered as a problem, and there is no one to show it to but the log.
  event.waitUntil(
    fetch(chosen.url, { method: "POST", headers: { Accept: "application/json" } }).catch(() => {}),
  );
});

function options(ring) {
  const actions = Array.isArray(ring.actions) ? ring.actions : [];
  return {
    body: ring.text,
    tag: ring.id,
    data: { id: ring.id, actions },
    actions: actions.map(({ action, title }) => ({ action, title })),
  };
}
