// The reminders page: one owner's reminders, contacts and live rings, through the public
// API with the owner's token. No framework and no build step: the DOM, fetch, EventSource.
"use strict";

(() => {
  const TOKEN_KEY = "tocsin.token";
  const PAGE_SIZE = 20;
  const READ_SIZE = 200; // reminders a request reads: a view is sorted over all it holds
  const MAX_LISTED = 2000; // of each status; more are listed in the order they were saved
  const PREVIEW_COUNT = 5;
  const PREVIEW_DELAY_MS = 300; // typing pauses this long before a preview is asked for
  const FEED_RETRY_MS = 3000;
  const LIST_SETTLE_MS = 2000; // after a ring is due, time for it to be claimed and sent
  const LIST_OVERDUE_MS = 10000; // a ring past its time or on its way: look again this often
  const LIST_HORIZON_MS = 86400000;
  const MORNING = "09:00";
  const CHANNELS = [
    ["inapp", "this page (in-app)"],
    ["email", "email"],
    ["sms", "text message"],
    ["apprise", "Apprise"],
    ["webpush", "browser push"],
    ["webhook", "webhook"],
    ["log", "the server's log"],
  ];
  const CONTACT_FIELDS = {
    email: { field: "address", label: "Email address", type: "email", placeholder: "ana@example.com" },
    sms: { field: "number", label: "Phone number", type: "tel", placeholder: "+351912345678" },
    apprise: { field: "url", label: "Apprise URL", type: "url", placeholder: "ntfys://ntfy.sh/my-topic" },
  };

  const $ = (id) => document.getElementById(id);
  const state = {
    token: null,
    owner: null,
    view: null, // the value of "Show" the list was last read for
    listed: [], // the view's reminders, sorted; `shown` of them are drawn
    shown: 0,
    listRound: 0,
    feed: null,
    feedRound: 0,
    previewRound: 0,
    previewTimer: 0,
    seen: new Set(),
    worker: null, // the service worker's registration (worker.js), once registered
    places: new Map(), // the owner's places by id, for the reminders that ring at one
    audio: null,
    channels: null, // what `GET /v1/channels` said this server rings (null: not known)
    signedIn: false,
    listTimer: 0,
  };

  // -- the API ------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, problem) {
      super(problem.detail || `the server answered ${status}`);
      this.status = status;
      this.problem = problem;
    }

    /** The message for each field the server named (`at`, `zone`…), and `body` for the rest. */
    fields() {
      const found = {};
      for (const error of this.problem.errors || []) found[error.field] = error.message;
      return found;
    }
  }

  async function api(method, path, body, headers = {}) {
    const init = { method, headers: { Authorization: `Bearer ${state.token}`, ...headers } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch {
      throw new ApiError(0, { detail: "the server cannot be reached; try again in a moment" });
    }
    const text = await response.text();
    const data = text ? JSON.parse(text) : null;
    if (response.status === 401) {
      // The server says which: never valid, expired or revoked.
      const why = (data && data.detail) || "the token is not valid";
      signOut(state.signedIn ? `Signed out: ${why}.` : `Not signed in: ${why}.`);
    }
    if (!response.ok) throw new ApiError(response.status, data || {});
    return { status: response.status, data, etag: response.headers.get("ETag") };
  }

  const ownerPath = () => `/v1/owners/${encodeURIComponent(state.owner)}`;

  function say(message, failed = false) {
    tell($("status"), message, failed);
  }

  /** A message in `place`, styled as a refusal when `failed`. */
  function tell(place, message, failed = false) {
    place.textContent = message;
    place.classList.toggle("failed", failed);
  }

  // -- signing in and out -------------------------------------------------------------------

  /** The owner an owner token names (`to_<base64url owner>.<signed>.<expiry>.<signature>`;
   * tokens from before they said when they were signed lack `<signed>`). */
  function ownerOf(token) {
    const match = /^to_([A-Za-z0-9_-]+)(?:\.\d+){1,2}\.[A-Za-z0-9_-]+$/.exec(token);
    if (!match) return null;
    try {
      const base64 = match[1].replace(/-/g, "+").replace(/_/g, "/");
      const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
      return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      return null;
    }
  }

  async function signIn(token) {
    const owner = ownerOf(token);
    if (!owner) {
      showSignIn("That is not an owner token: it starts with to_ and has dots between its parts.");
      return;
    }
    state.token = token;
    state.owner = owner;
    try {
      await loadReminders();
    } catch (error) {
      if (error.status !== 401) showSignIn(`Cannot sign in: ${error.message}.`);
      return;
    }
    state.signedIn = true;
    await loadChannels();
    localStorage.setItem(TOKEN_KEY, token);
    $("owner-name").textContent = owner;
    $("sign-in").hidden = true;
    $("account").hidden = false;
    $("app").hidden = false;
    showNotifyButton();
    loadContacts().catch((error) => say(`Contacts: ${error.message}.`, true));
    loadPlaces().catch((error) => say(`Places: ${error.message}.`, true));
    loadQuiet().catch((error) => say(`Quiet hours: ${error.message}.`, true));
    loadLists().catch((error) => say(`Lists: ${error.message}.`, true));
    openFeed();
  }

  function signOut(message) {
    localStorage.removeItem(TOKEN_KEY);
    closeFeed();
    clearTimeout(state.listTimer);
    state.token = null;
    state.owner = null;
    state.signedIn = false;
    Object.assign(state, { view: null, listed: [], shown: 0 });
    $("reminder-list").replaceChildren();
    $("contact-list").replaceChildren();
    $("lists-list").replaceChildren();
    $("rings").replaceChildren();
    $("ringing").hidden = true;
    say("");
    showSignIn(message || "");
  }

  function showSignIn(message) {
    $("app").hidden = true;
    $("account").hidden = true;
    $("sign-in").hidden = false;
    $("token-error").textContent = message;
    $("token").setAttribute("aria-invalid", message ? "true" : "false");
    $("token").focus();
  }

  // -- the live feed ------------------------------------------------------------------------

  // An EventSource cannot send Authorization: it opens the feed with a ticket good for a
  // minute. When the connection ends for good (the ticket expired before a reconnect
  // succeeded), a new ticket opens a new one.
  async function openFeed() {
    closeFeed();
    const round = ++state.feedRound;
    let ticket;
    try {
      ticket = (await api("POST", `${ownerPath()}/feed/tickets`)).data.ticket;
    } catch (error) {
      if (state.token && error.status !== 401) setTimeout(() => reopenFeed(round), FEED_RETRY_MS);
      return;
    }
    if (round !== state.feedRound) return;
    const source = new EventSource(`${ownerPath()}/feed?ticket=${encodeURIComponent(ticket)}`);
    source.onmessage = (event) => ring(JSON.parse(event.data));
    source.onopen = () => document.body.setAttribute("data-feed", "open");
    source.onerror = () => {
      document.body.setAttribute("data-feed", "lost");
      if (source.readyState === EventSource.CLOSED) setTimeout(() => reopenFeed(round), FEED_RETRY_MS);
    };
    state.feed = source;
  }

  function reopenFeed(round) {
    if (state.token && round === state.feedRound) openFeed();
  }

  function closeFeed() {
    state.feedRound += 1;
    if (state.feed) state.feed.close();
    state.feed = null;
    document.body.removeAttribute("data-feed");
  }

  function ring(event) {
    if (state.seen.has(event.id)) return; // at least once: a ring may come twice
    state.seen.add(event.id);
    const item = document.createElement("li");
    item.className = "ring";
    item.setAttribute("role", "alert");
    const text = document.createElement("strong");
    text.textContent = event.text;
    const due = document.createElement("span");
    due.textContent = ` due ${Words.instant(event.due, zoneOfBrowser())}`;
    const answer = document.createElement("p");
    answer.className = "answer";
    // The ring's own actions (the feed's event lists them): Done, then Snooze 10 min. The page
    // takes them through the API with its token, as the rest of the page does.
    const done = button("Done", `Mark “${event.text}” done`);
    const snooze = button("Snooze 10 min", `Snooze “${event.text}” 10 minutes`);
    const dismiss = button("Dismiss", `Dismiss “${event.text}”`);
    done.addEventListener("click", async () => {
      try {
        await api("POST", `/v1/firings/${encodeURIComponent(event.id)}/done`);
        say(`Marked “${event.text}” done.`);
        dismissRing(item);
        reloadReminders();
      } catch (error) {
        tell(answer, `Not marked done: ${error.message}.`, true);
      }
    });
    snooze.addEventListener("click", async () => {
      try {
        const { data } = await api("POST", `/v1/reminders/${event.reminder_id}/snooze`, { snooze: "10m" });
        say(`Snoozed “${event.text}”: it rings again ${Words.fromNow(data.next)}.`);
        dismissRing(item);
        reloadReminders();
      } catch (error) {
        tell(answer, `Not snoozed: ${error.message}.`, true);
      }
    });
    dismiss.addEventListener("click", () => dismissRing(item));
    item.append(text, due, document.createElement("br"), done, snooze, dismiss, answer);
    $("rings").prepend(item);
    $("ringing").hidden = false;
    sound();
    notify(event);
    reloadReminders();
  }

  function dismissRing(item) {
    const wasFocused = item.contains(document.activeElement);
    item.remove();
    const next = $("rings").querySelector("button");
    $("ringing").hidden = !$("rings").children.length;
    if (wasFocused) (next || $("new-say")).focus();
  }

  function sound() {
    try {
      state.audio = state.audio || new AudioContext();
      const audio = state.audio;
      audio.resume();
      for (const start of [0, 0.3, 0.6]) {
        const tone = audio.createOscillator();
        const volume = audio.createGain();
        tone.frequency.value = 880;
        volume.gain.setValueAtTime(0.2, audio.currentTime + start);
        volume.gain.exponentialRampToValueAtTime(0.001, audio.currentTime + start + 0.25);
        tone.connect(volume).connect(audio.destination);
        tone.start(audio.currentTime + start);
        tone.stop(audio.currentTime + start + 0.25);
      }
    } catch {
      // No audio device: the ring still shows.
    }
  }

  function notify(event) {
    if (!("Notification" in window) || Notification.permission !== "granted") return;
    // Through the service worker when it runs: only its notifications can offer the ring's
    // actions (Done, Snooze 10 min), which it posts when tapped (worker.js).
    if (state.worker && state.worker.active && event.actions) {
      const actions = event.actions.map(({ action, title }) => ({ action, title }));
      const data = { id: event.id, actions: event.actions };
      state.worker.showNotification("Tocsin", { body: event.text, tag: event.id, data, actions });
      return;
    }
    new Notification("Tocsin", { body: event.text, tag: event.id });
  }

  /** Registers the service worker (worker.js), which shows rings with their actions; a
   * browser without one (or a page not served over https or from loopback) does without. */
  async function registerWorker() {
    if (!("serviceWorker" in navigator)) return;
    try {
      state.worker = await navigator.serviceWorker.register("/web/worker.js", { scope: "/web/" });
    } catch {
      state.worker = null;
    }
  }

  function showNotifyButton() {
    $("notify").hidden = !("Notification" in window) || Notification.permission !== "default";
  }

  // -- creating -----------------------------------------------------------------------------

  const zoneOfBrowser = () => Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";

  /** The zones "Time zone" offers as one types, this browser's own first. */
  function fillZones() {
    const own = zoneOfBrowser();
    const known = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];
    const others = [...new Set([...known, "UTC"])].filter((zone) => zone !== own);
    $("zones").replaceChildren(
      new Option(`${own} (this browser's zone)`, own),
      ...others.map((zone) => new Option(zone, zone)),
    );
  }

  /** The channels that can ring for this owner now, to choose from; a reminder's own channel
   * stays offered while it is edited, ready or not, so that saving another change keeps it. */
  function fillChannels(select, chosen) {
    const known = state.channels;
    const offered = CHANNELS.filter(([value]) => !known || known.includes(value) || value === chosen);
    if (typeof chosen === "string" && !offered.some(([value]) => value === chosen)) {
      offered.push([chosen, chosen]);
    }
    select.replaceChildren(...offered.map(([value, label]) => new Option(label, value, false, value === chosen)));
  }

  const channelLabel = (value) => (CHANNELS.find(([v]) => v === value) || [value, value])[1];

  /** What can ring for this owner (`GET …/channels`): a channel the server rings but that
   * has nowhere to go yet (no contact of its kind, no webhook URL) is not offered, and the
   * hint under "Ring by" says why. */
  async function loadChannels() {
    let found = null;
    try {
      found = (await api("GET", `${ownerPath()}/channels`)).data.channels;
    } catch {
      found = null; // the server refuses what it cannot ring, and warns of what finds nowhere
    }
    state.channels = found && found.filter((c) => c.ready).map((c) => c.channel);
    // A list's reminder rings its members' contacts: every channel the server rings but the feed.
    state.listChannels = (found || []).filter((c) => c.configured && c.channel !== "inapp").map((c) => c.channel);
    const waiting = (found || []).filter((c) => c.configured && !c.ready && CONTACT_FIELDS[c.channel]);
    $("new-channel-hint").textContent = waiting.length
      ? `Add a contact below to ring by ${waiting.map((c) => channelLabel(c.channel)).join(" or ")}.`
      : "";
    const was = $("new-channel").value;
    const known = state.channels;
    const keep = known && known.includes(was) ? was : null;
    const first = CHANNELS.find(([value]) => !known || known.includes(value));
    fillChannels($("new-channel"), keep || (!known || known.includes("inapp") || !first ? "inapp" : first[0]));
  }

  function showErrors(error, places) {
    const fields = error.fields();
    let placed = false;
    for (const [field, place] of Object.entries(places)) {
      const message = fields[field] || "";
      if (place.error) place.error.textContent = message;
      if (place.input) place.input.setAttribute("aria-invalid", message ? "true" : "false");
      placed = placed || Boolean(message);
    }
    return placed;
  }

  const createPlaces = () => ({
    say: { input: $("new-say"), error: $("new-say-error") },
    zone: { input: $("new-zone"), error: $("new-zone-error") },
    channel: { input: $("new-channel"), error: $("new-channel-error") },
  });

  function clearErrors(places) {
    for (const place of Object.values(places)) {
      if (place.error) place.error.textContent = "";
      if (place.input) place.input.setAttribute("aria-invalid", "false");
    }
  }

  function schedulePreview() {
    clearTimeout(state.previewTimer);
    state.previewTimer = setTimeout(preview, PREVIEW_DELAY_MS);
  }

  async function preview() {
    const say = $("new-say").value.trim();
    const zone = $("new-zone").value.trim();
    const round = ++state.previewRound;
    const places = createPlaces();
    if (!say || !zone || $("new-where").value) {
      showPreview(null, zone);
      return;
    }
    try {
      // The server finds the words and the time in the sentence, by the same grammar as saving.
      const { data } = await api("POST", "/v1/occurrences", { zone, say, count: PREVIEW_COUNT });
      if (round !== state.previewRound) return;
      clearErrors({ say: places.say, zone: places.zone });
      showPreview(data, zone);
    } catch (error) {
      if (round !== state.previewRound) return;
      showPreview(null, zone);
      if (!showErrors(error, { say: places.say, zone: places.zone })) {
        $("new-say-error").textContent = error.message;
      }
    }
  }

  /** The words the server read as the reminder and as its time, and its next rings. */
  function showPreview(read, zone) {
    const items = (read ? read.occurrences : []).map((o) => {
      const item = document.createElement("li");
      const time = document.createElement("time");
      time.dateTime = o.at;
      time.textContent = Words.localTime(o.local, zone);
      item.append(time, ` — ${Words.fromNow(o.at)}`);
      return item;
    });
    $("preview-list").replaceChildren(...items);
    $("preview-title").hidden = !items.length;
    $("preview-text").hidden = !read;
    $("preview-text").textContent = read ? `“${read.text}” — ${read.when}` : "";
  }

  async function create(event) {
    event.preventDefault();
    // A preview still on its way is of words this save replaces: its answer must not show.
    clearTimeout(state.previewTimer);
    state.previewRound++;
    const places = createPlaces();
    clearErrors(places);
    tell($("create-answer"), "");
    const body = {
      say: $("new-say").value,
      zone: $("new-zone").value.trim(),
      channel: $("new-channel").value,
    };
    const where = $("new-where").value;
    if (where) Object.assign(body, placeFields(where, body.say));
    if (!(where ? body.text : body.say).trim()) {
      places.say.error.textContent = EMPTY_TEXT;
      places.say.input.setAttribute("aria-invalid", "true");
      places.say.input.focus();
      return;
    }
    try {
      const { data } = await api("POST", "/v1/reminders", body);
      const rings = data.on ? placeWords(data.on) : `${Words.localTime(data.next_local, data.zone)} (${Words.fromNow(data.next)})`;
      const saved = `Saved “${data.text}”: it rings ${rings}.`;
      tell($("create-answer"), [saved, ...warningsOf(data)].join(" "), Boolean(data.warnings));
      $("new-say").value = "";
      showPreview(null, body.zone);
      $("new-say").focus();
      // Show where the new one is: a view it does not belong to would hide it.
      if (!viewShows(VIEWS[$("filter").value] || VIEWS.pending, data)) $("filter").value = "pending";
      await loadReminders(data);
    } catch (error) {
      if (!showErrors(error, places)) tell($("create-answer"), `Not saved: ${error.message}.`, true);
      const wrong = Object.values(places).find((p) => p.input.getAttribute("aria-invalid") === "true");
      if (wrong) wrong.input.focus();
    }
  }

  /** A reminder at a place: `say` becomes its words, and `on` what rings it (the "Ring"
   * choice, `arrive:<place id>` or `leave:<place id>`, with "Only after" and "once a day"). */
  function placeFields(where, said) {
    const [event, place] = where.split(":");
    const on = { place, event };
    if ($("new-after").value) on.after = $("new-after").value;
    if ($("new-once").checked) on.once = "day";
    return { say: undefined, text: said, on };
  }

  /** What rings a reminder at a place, in the owner's words: `when you arrive at Home after 17:00`. */
  function placeWords(on) {
    const name = state.places.get(on.place)?.name || "a place that is gone";
    const verb = on.event === "leave" ? `when you leave ${name}` : `when you arrive at ${name}`;
    const window = on.after ? ` after ${on.after}` : "";
    return `${verb}${window}${on.once === "day" ? ", once a day" : on.once === "ever" ? ", once" : ""}`;
  }

  /** The server's word on a channel a saved reminder cannot ring by yet. */
  const warningsOf = (data) => (data.warnings || []).map((w) => `But: ${w.message}.`);

  // -- the list -----------------------------------------------------------------------------

  function button(label, accessibleName) {
    const made = document.createElement("button");
    made.type = "button";
    made.textContent = label;
    if (accessibleName) made.setAttribute("aria-label", accessibleName);
    return made;
  }

  // Each view: the statuses it reads, which of their reminders it shows, in what order, and
  // the statuses it watches without showing them: a view of what has rung reads the pending
  // too, as what rings next joins it.
  const VIEWS = {
    pending: { statuses: ["pending"] },
    today: { statuses: ["pending", "fired", "ended"], shows: (r) => ringToday(r) !== null, order: byRingToday },
    overdue: { statuses: ["pending", "fired", "ended"], shows: (r) => isOverdue(r) || isFailed(r) },
    fired: { statuses: ["fired"], watches: ["pending"] },
    ended: { statuses: ["ended"], watches: ["pending"] },
    cancelled: { statuses: ["cancelled"] },
    "": { statuses: [null] },
  };
  const FAILED = ["failed", "expired"];
  const RINGING = ["queued", "sending"];
  const isFailed = (r) => Boolean(r.last_firing && FAILED.includes(r.last_firing.state));
  const isOverdue = (r) => r.status === "pending" && r.next && Date.parse(r.next) < Date.now() - LIST_SETTLE_MS;
  const viewShows = (view, r) => view.statuses.some((s) => s === null || s === r.status) && (!view.shows || view.shows(r));

  /** The instant a reminder rings today on its own clock: its next ring, else its last; null
   * when neither is today. */
  function ringToday(r) {
    if (r.next && Words.isToday(r.next, r.zone)) return r.next;
    if (r.last_firing && Words.isToday(r.last_firing.due, r.zone)) return r.last_firing.due;
    return null;
  }

  /** The day in the order it rings: what rang this morning above what rings tonight. */
  function byRingToday(a, b) {
    return Date.parse(ringToday(a)) - Date.parse(ringToday(b));
  }

  /** Soonest ring first; those with none after, the latest ring first. */
  function byNextRing(a, b) {
    if (a.next && b.next) return Date.parse(a.next) - Date.parse(b.next);
    if (a.next || b.next) return a.next ? -1 : 1;
    const rang = (r) => (r.last_firing ? Date.parse(r.last_firing.due) : Date.parse(r.updated_at));
    return rang(b) - rang(a);
  }

  /** The reminders of a status (all of them: null), oldest saved first, up to MAX_LISTED: the
   * API lists by creation, so a view is sorted here over all it read. */
  async function readAll(status) {
    const found = [];
    let cursor = null;
    do {
      const query = new URLSearchParams({ limit: String(READ_SIZE) });
      if (status) query.set("status", status);
      if (cursor) query.set("cursor", cursor);
      const { data } = await api("GET", `/v1/reminders?${query}`);
      found.push(...data.reminders);
      cursor = data.next_cursor;
    } while (cursor && found.length < MAX_LISTED);
    return { found, cut: Boolean(cursor) };
  }

  /** The view read again and drawn as far down as it was (a page at least), and down to
   * `made`, a reminder just saved or snoozed, however far down the view it falls. */
  async function loadReminders(made = null) {
    const round = ++state.listRound;
    const name = $("filter").value;
    const view = VIEWS[name] || VIEWS.pending;
    const [lists, watched] = await Promise.all([
      Promise.all(view.statuses.map(readAll)),
      Promise.all((view.watches || []).map(readAll)),
    ]);
    if (round !== state.listRound) return; // a newer load replaced the list meanwhile
    const read = lists.flatMap((list) => list.found);
    // One saved past the MAX_LISTED read is shown all the same, from the server's answer.
    if (made && viewShows(view, made) && !read.some((r) => r.id === made.id)) read.push(made);
    const listed = read.filter((r) => viewShows(view, r)).sort(view.order || byNextRing);
    const at = made ? listed.findIndex((r) => r.id === made.id) : -1;
    const count = Math.max(PAGE_SIZE, name === state.view ? state.shown : 0, at + 1);
    Object.assign(state, { view: name, listed, shown: 0 });
    $("reminder-list").replaceChildren();
    drawMore(count);
    $("reminders-empty").textContent = EMPTY_WORDS[name] || EMPTY_WORDS[""];
    $("reminders-empty").hidden = listed.length > 0;
    $("reminders-cut").hidden = !lists.some((list) => list.cut);
    refreshAfterNextRing(read.concat(...watched.map((list) => list.found)));
  }

  /** The next `count` reminders of the view drawn below those shown. */
  function drawMore(count = PAGE_SIZE) {
    const next = state.listed.slice(state.shown, state.shown + count);
    state.shown += next.length;
    $("reminder-list").append(...next.map(reminderItem));
    $("more").hidden = state.shown >= state.listed.length;
  }

  /** The list again, with a failure said rather than thrown (a ring or a snooze asks). */
  function reloadReminders() {
    return loadReminders().catch((error) => say(`Your reminders: ${error.message}.`, true));
  }

  // A ring by another channel than this page's sends the page no event: the list is read
  // again once the soonest ring read is due, shown or watched (a ring that fails joins the
  // view of failures, one that rings leaves "coming up" and joins "rang"), and while a ring
  // is on its way, until it says "delivered" or "failed".
  function refreshAfterNextRing(reminders) {
    clearTimeout(state.listTimer);
    const due = reminders.filter((r) => r.next).map((r) => Date.parse(r.next) - Date.now());
    if (reminders.some((r) => r.last_firing && RINGING.includes(r.last_firing.state))) due.push(0);
    const ahead = Math.min(...due);
    if (!due.length || ahead > LIST_HORIZON_MS) return;
    const wait = ahead > 0 ? ahead + LIST_SETTLE_MS : LIST_OVERDUE_MS;
    state.listTimer = setTimeout(() => {
      if (state.signedIn) reloadReminders();
    }, wait);
  }

  const STATUS_WORDS = { fired: "rang", ended: "ended", cancelled: "cancelled" };
  // A ring's state as its owner asks of it: did it reach me?
  const RING_WORDS = { sent: "delivered", failed: "failed", expired: "failed (too late to send)", queued: "ringing", sending: "ringing" };
  const EMPTY_WORDS = {
    pending: "Nothing coming up.",
    today: "Nothing rings today.",
    overdue: "Nothing overdue, nothing failed.",
    fired: "Nothing has rung yet.",
    ended: "No series has ended.",
    cancelled: "Nothing cancelled.",
    "": "Nothing here yet.",
  };
  const EMPTY_TEXT = "Say what the reminder is for: its words are what rings.";

  function reminderItem(reminder) {
    const item = $("reminder-template").content.firstElementChild.cloneNode(true);
    item.dataset.id = reminder.id;
    const q = (selector) => item.querySelector(selector);
    q(".text").textContent = reminder.text;
    if (reminder.next) {
      q(".next").dateTime = reminder.next;
      q(".next").textContent = Words.localTime(reminder.next_local, reminder.zone);
      q(".in").dataset.at = reminder.next;
      q(".in").textContent = `(${Words.fromNow(reminder.next)})`;
    } else if (reminder.on && reminder.status === "pending") {
      q(".next").textContent = placeWords(reminder.on);
    } else {
      q(".next").textContent = STATUS_WORDS[reminder.status] || reminder.status;
    }
    q(".repeat").textContent = `${Words.repeat(reminder)} (${reminder.zone})`;
    const channel = CHANNELS.find(([value]) => value === reminder.channel);
    q(".channel").textContent = `by ${channel ? channel[1] : reminder.channel}`;
    if (reminder.alerts.length) {
      // The next ring may be an alert: say which time it comes before.
      const occurrence = reminder.next_occurrence;
      const early = occurrence && occurrence !== reminder.next;
      const forWhat = early ? `; the next for ${Words.instant(occurrence, reminder.zone)}` : "";
      q(".alerts").textContent = ` · alerts ${reminder.alerts.join(", ")} before${forWhat}`;
    }
    if (reminder.until_done) q(".nags").textContent = ` · again every ${reminder.until_done} until done`;
    if (reminder.priority === "bulk") {
      const through = reminder.ignore_quiet_hours ? ", through quiet hours" : "";
      q(".priority").textContent = ` · bulk (after urgent ones${through})`;
    }
    if (reminder.last_firing) {
      const state = reminder.last_firing.state;
      q(".last").textContent = ` · last ring: ${RING_WORDS[state] || state}`;
      q(".last").classList.toggle("failed", FAILED.includes(state));
    }
    if (isOverdue(reminder)) q(".in").classList.add("failed");
    snoozeChoices(item, reminder);
    const name = `“${reminder.text}”`;
    q(".snooze summary").setAttribute("aria-label", `Snooze ${name}`);
    q(".edit").setAttribute("aria-label", `Edit ${name}`);
    q(".delete").setAttribute("aria-label", `Delete ${name}`);
    q(".history summary").setAttribute("aria-label", `History of ${name}`);
    // Only what the server would do: a snooze needs a ring to snooze (or a one-off to
    // move), a delete a reminder still to ring (`ReminderService.snooze`, `cancel_conflict`).
    const pending = reminder.status === "pending";
    const cancelled = reminder.status === "cancelled";
    q(".snooze").hidden = cancelled || !(reminder.last_firing || (pending && !reminder.rule));
    q(".delete").hidden = !pending;
    q(".edit").hidden = cancelled;
    for (const choice of item.querySelectorAll("[data-snooze]")) {
      choice.addEventListener("click", () => snooze(item, reminder, choice.dataset.snooze));
    }
    q(".edit").addEventListener("click", () => edit(item, reminder));
    q(".delete").addEventListener("click", () => askRemove(item, reminder));
    q(".history").addEventListener("toggle", () => {
      if (q(".history").open) showHistory(item, reminder);
    });
    return item;
  }

  /** The snooze choices say what they count from. A one-off still to ring is put off from
   * its own time ("10 min later"): a snooze never brings it forward (`changes.snooze_due`),
   * which is what one asks of a reminder due tomorrow. A ring that came rings again counting
   * from now ("In 10 min"), as an alarm clock's snooze does. */
  function snoozeChoices(item, reminder) {
    const q = (selector) => item.querySelector(selector);
    const ahead = reminder.status === "pending" && !reminder.rule && reminder.next && Date.parse(reminder.next) > Date.now();
    q('[data-snooze="10m"]').textContent = ahead ? "10 min later" : "In 10 min";
    q('[data-snooze="1h"]').textContent = ahead ? "1 hour later" : "In 1 hour";
    q(".snooze-from").hidden = !ahead;
    if (ahead) q(".snooze-from").textContent = `From its time, ${Words.instant(reminder.next_occurrence, reminder.zone)}:`;
    q(".until").placeholder = Words.example();
  }

  /** Tomorrow at `MORNING` on `zone`'s clock, as a local wall time the server reads there. */
  function tomorrowMorning(zone) {
    const today = new Intl.DateTimeFormat("en-CA", {
      timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit",
    }).format(new Date());
    const [y, m, d] = today.split("-").map(Number);
    const tomorrow = new Date(Date.UTC(y, m - 1, d + 1)).toISOString().slice(0, 10);
    return `${tomorrow}T${MORNING}`;
  }

  async function snooze(item, reminder, choice) {
    const answer = item.querySelector(".answer");
    let body = { snooze: choice };
    if (choice === "morning") body = { snooze_until: tomorrowMorning(reminder.zone) };
    if (choice === "custom") {
      const until = item.querySelector(".until").value;
      if (!until) {
        tell(answer, "Pick a time to snooze until first.", true);
        item.querySelector(".until").focus();
        return;
      }
      body = { snooze_until: until };
    }
    try {
      const { status, data } = await api("POST", `/v1/reminders/${reminder.id}/snooze`, body);
      const when = `${Words.localTime(data.next_local, data.zone)} (${Words.fromNow(data.next)})`;
      const said = status === 201 ? `Snoozed: a new reminder rings ${when}.` : `Snoozed: it rings ${when}.`;
      await loadReminders(data);
      const shown = $("reminder-list").querySelector(`[data-id="${data.id}"]`);
      tell(shown ? shown.querySelector(".answer") : $("status"), said);
      if (shown) shown.querySelector(".snooze summary").focus();
    } catch (error) {
      tell(answer, `Not snoozed: ${error.message}.`, true);
    }
  }

  /** A delete asks first: the buttons `actions` give way to the question (`what`, named
   * `name` on its buttons) until it is answered; `onYes` then deletes, `onNo` puts them back. */
  function askFirst(actions, what, name, question, onYes, onNo) {
    const ask = document.createElement("p");
    ask.className = "confirm";
    const yes = button("Delete", `Yes, delete ${name}`);
    const no = button("Keep it", `Keep ${name}`);
    ask.append(`Delete ${what}? ${question} `, yes, " ", no);
    actions.hidden = true;
    actions.after(ask);
    no.focus();
    no.addEventListener("click", () => {
      ask.remove();
      actions.hidden = false;
      onNo();
    });
    yes.addEventListener("click", () => {
      ask.remove();
      onYes();
    });
  }

  function askRemove(item, reminder) {
    const named = `“${reminder.text}”`;
    askFirst(item.querySelector(".actions"), named, named, "It will not ring.",
      () => remove(item, reminder), () => item.querySelector(".delete").focus());
  }

  async function remove(item, reminder) {
    const answer = item.querySelector(".answer");
    try {
      const { status } = await api("DELETE", `/v1/reminders/${reminder.id}`);
      const onItsWay = status === 200 ? ": the ring due now is already on its way" : "";
      tell(answer, `Deleted “${reminder.text}”${onItsWay}.`);
      item.classList.add("gone");
      item.querySelector(".actions").hidden = true;
    } catch (error) {
      tell(answer, `Not deleted: ${error.message}.`, true);
      item.querySelector(".actions").hidden = false;
    }
    answer.tabIndex = -1;
    answer.focus();
  }

  async function edit(item, reminder) {
    const answer = item.querySelector(".answer");
    let current;
    try {
      current = await api("GET", `/v1/reminders/${reminder.id}`);
    } catch (error) {
      tell(answer, `Cannot edit: ${error.message}.`, true);
      return;
    }
    const form = $("edit-template").content.firstElementChild.cloneNode(true);
    const fields = form.elements;
    const was = current.data;
    fields.text.value = was.text;
    const whenWas = Words.whenOf(was);
    fields.when.value = whenWas;
    fields.zone.value = was.zone;
    fillChannels(fields.channel, was.channel);
    // Quiet hours hold bulk rings alone: an urgent reminder has nothing to ignore.
    fields.ignore_quiet_hours.checked = was.ignore_quiet_hours;
    fields.alerts.value = was.alerts.join(", ");
    fields.until_done.value = was.until_done || "";
    form.querySelector(".through").hidden = was.priority !== "bulk";
    item.querySelector(".actions").hidden = true;
    item.insertBefore(form, answer);
    fields.text.focus();
    const close = () => {
      form.remove();
      item.querySelector(".actions").hidden = false;
      item.querySelector(".edit").focus();
    };
    form.querySelector(".cancel-edit").addEventListener("click", close);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const change = {};
      for (const name of ["text", "zone", "channel"]) {
        if (fields[name].value !== was[name]) change[name] = fields[name].value;
      }
      if (fields.when.value.trim() !== whenWas) {
        change.when = fields.when.value;
      }
      const alerts = fields.alerts.value.split(",").map((lead) => lead.trim()).filter(Boolean);
      if (alerts.join(",") !== was.alerts.join(",")) change.alerts = alerts;
      const nag = fields.until_done.value.trim() || null;
      if (nag !== was.until_done) change.until_done = nag;
      if (fields.ignore_quiet_hours.checked !== was.ignore_quiet_hours) {
        change.ignore_quiet_hours = fields.ignore_quiet_hours.checked;
      }
      if (!Object.keys(change).length) {
        close();
        return;
      }
      if (!fields.text.value.trim()) {
        form.querySelector(".error").textContent = EMPTY_TEXT;
        fields.text.setAttribute("aria-invalid", "true");
        fields.text.focus();
        return;
      }
      try {
        const { data } = await api("PATCH", `/v1/reminders/${reminder.id}`, change, { "If-Match": current.etag });
        const fresh = reminderItem(data);
        item.replaceWith(fresh);
        tell(fresh.querySelector(".answer"), ["Saved.", ...warningsOf(data)].join(" "), Boolean(data.warnings));
        fresh.querySelector(".edit").focus();
      } catch (error) {
        const messages = Object.entries(error.fields()).map(([field, message]) => `${field}: ${message}`);
        form.querySelector(".error").textContent = `Not saved: ${messages.join("; ") || error.message}.`;
      }
    });
  }

  async function showHistory(item, reminder) {
    const box = item.querySelector(".firings");
    box.textContent = "Loading…";
    try {
      const { data } = await api("GET", `/v1/reminders/${reminder.id}/firings?limit=20`);
      if (!data.firings.length) {
        box.textContent = "It has not rung yet.";
        return;
      }
      const rings = document.createElement("ul");
      rings.append(...data.firings.map((firing) => firingItem(firing, reminder.zone)));
      box.replaceChildren(rings);
    } catch (error) {
      box.textContent = `Cannot read its history: ${error.message}.`;
    }
  }

  function firingItem(firing, zone) {
    const item = document.createElement("li");
    const attempts = firing.attempts === 1 ? "1 attempt" : `${firing.attempts} attempts`;
    let summary = `Due ${Words.instant(firing.due, zone)}: ${firing.state} by ${firing.channel}, ${attempts}`;
    if (firing.sent_at) summary += `, sent ${Words.instant(firing.sent_at, zone)}`;
    if (firing.last_error) summary += ` — ${firing.last_error}`;
    item.append(summary);
    if (firing.done_at) {
      item.append(` · done ${Words.instant(firing.done_at, zone)}`);
    } else {
      // Done stops the nags of a reminder rung until done (POST …/done takes them back).
      const done = document.createElement("button");
      done.type = "button";
      done.className = "done";
      done.textContent = "Done";
      done.setAttribute("aria-label", `Mark the ring due ${Words.instant(firing.due, zone)} done`);
      done.addEventListener("click", async () => {
        try {
          const { data } = await api("POST", `/v1/firings/${encodeURIComponent(firing.id)}/done`);
          done.replaceWith(` · done ${Words.instant(data.done_at, zone)}`);
          reloadReminders();  // its nags stopped: its next ring changed
        } catch (error) {
          done.replaceWith(` · not marked done: ${error.message}`);
        }
      });
      item.append(" ", done);
    }
    if (firing.history.length) {
      const tries = document.createElement("ol");
      for (const attempt of firing.history) {
        const line = document.createElement("li");
        const where = attempt.destination ? ` to ${attempt.destination}` : "";
        line.textContent = `${Words.instant(attempt.at, zone)}${where}: ${attempt.outcome}${attempt.error ? ` (${attempt.error})` : ""}`;
        tries.append(line);
      }
      item.append(tries);
    }
    return item;
  }

  function refreshWords() {
    for (const place of document.querySelectorAll(".in[data-at]")) {
      place.textContent = `(${Words.fromNow(place.dataset.at)})`;
    }
  }

  // -- contacts -----------------------------------------------------------------------------

  async function loadContacts() {
    const { data } = await api("GET", `${ownerPath()}/contacts?limit=200`);
    $("contact-list").replaceChildren(...data.contacts.map(contactItem));
  }

  function contactItem(contact) {
    const item = document.createElement("li");
    item.className = "contact";
    const kind = CONTACT_FIELDS[contact.kind] ? CONTACT_FIELDS[contact.kind].label : contact.kind;
    const where = Object.values(contact.address).join(" ");
    const text = document.createElement("span");
    const label = contact.label ? ` (${contact.label})` : "";
    // An app's contact takes only that app's rings; say whose it is.
    const saver = contact.source ? ` · from ${contact.source}` : "";
    text.textContent = `${kind}: ${where}${label}${saver}`;
    item.append(text);
    if (contact.disabled_reason) {
      item.classList.add("disabled");
      const why = document.createElement("p");
      why.className = "why";
      why.textContent = `Not ringing: ${contact.disabled_reason}`;
      item.append(why);
    }
    const drop = button("Remove", `Remove ${kind} ${where}`);
    drop.addEventListener("click", async () => {
      try {
        await api("DELETE", `${ownerPath()}/contacts/${contact.id}`);
        say(`Removed ${kind} ${where}.`);
        await loadContacts();
        await loadChannels();
        $("contact-kind").focus();
      } catch (error) {
        say(`Not removed: ${error.message}.`, true);
      }
    });
    item.append(drop);
    return item;
  }

  function contactKindChanged() {
    const kind = CONTACT_FIELDS[$("contact-kind").value];
    $("contact-value-label").textContent = kind.label;
    $("contact-value").type = kind.type;
    $("contact-value").placeholder = kind.placeholder;
  }

  async function addContact(event) {
    event.preventDefault();
    const kind = $("contact-kind").value;
    const body = { kind, [CONTACT_FIELDS[kind].field]: $("contact-value").value.trim() };
    if ($("contact-label").value.trim()) body.label = $("contact-label").value.trim();
    $("contact-error").textContent = "";
    $("contact-value").setAttribute("aria-invalid", "false");
    try {
      await api("POST", `${ownerPath()}/contacts`, body);
      $("contact-value").value = "";
      $("contact-label").value = "";
      say("Contact added.");
      await loadContacts();
      await loadChannels();
    } catch (error) {
      const messages = Object.values(error.fields());
      $("contact-error").textContent = `Not added: ${messages.join("; ") || error.message}.`;
      $("contact-value").setAttribute("aria-invalid", "true");
      $("contact-value").focus();
    }
  }

  // -- places -------------------------------------------------------------------------------

  async function loadPlaces() {
    const { data } = await api("GET", `${ownerPath()}/places?limit=200`);
    state.places = new Map(data.places.map((place) => [place.id, place]));
    $("place-list").replaceChildren(...data.places.map(placeItem));
    const chosen = $("new-where").value;
    const choices = data.places.flatMap((place) => [
      new Option(`when I arrive at ${place.name}`, `arrive:${place.id}`),
      new Option(`when I leave ${place.name}`, `leave:${place.id}`),
    ]);
    $("new-where").replaceChildren(new Option("at the time I say", ""), ...choices);
    $("new-where").value = state.places.has(chosen.split(":")[1]) ? chosen : "";
    $("new-where-row").hidden = !data.places.length; // no place yet: only times
    whereChanged();
    // Reminders at a place name it: those drawn before its name was known are drawn again.
    if (state.listed.some((r) => r.on)) reloadReminders();
  }

  /** The place's options show only when the reminder rings at a place. */
  function whereChanged() {
    const atPlace = Boolean($("new-where").value);
    $("new-place-options").hidden = !atPlace;
    $("new-say").placeholder = atPlace ? "take the bins out" : "call mom tomorrow at 6pm";
    schedulePreview();
  }

  /** Report an arrival at `place` now, as the owner's phone would: its reminders ring. */
  async function arrive(place) {
    try {
      const body = { event: "arrive", at: new Date().toISOString().replace(/\.\d+Z$/, "Z") };
      const { data } = await api("POST", `${ownerPath()}/places/${place.id}/events`, body);
      const count = data.rang.length;
      say(`Arrived at ${place.name}: ${count === 1 ? "1 reminder rings" : `${count} reminders ring`}.`);
      await loadReminders();
    } catch (error) {
      say(`Not reported: ${error.message}.`, true);
    }
  }

  function placeItem(place) {
    const item = document.createElement("li");
    item.className = "place";
    const text = document.createElement("span");
    const saver = place.source ? ` · from ${place.source}` : "";
    const radius = `${place.radius_m.toLocaleString()} m`;
    text.textContent = `${place.name}: ${place.latitude}, ${place.longitude} (within ${radius})${saver}`;
    const drop = button("Remove", `Remove place ${place.name}`);
    drop.addEventListener("click", async () => {
      try {
        await api("DELETE", `${ownerPath()}/places/${place.id}`);
        say(`Removed ${place.name}.`);
        await loadPlaces();
        $("place-name").focus();
      } catch (error) {
        say(`Not removed: ${error.message}.`, true);
      }
    });
    const here = button("I'm here", `I'm at ${place.name} now`);
    here.addEventListener("click", () => arrive(place));
    item.append(text, here, drop);
    return item;
  }

  /** "52.52, 13.405" as the API's two numbers; the server says whether they lie on the
   * earth. Anything else is left as typed, for the server to refuse by name. */
  function centreOf(typed) {
    const parts = typed.split(/[,\s]+/).filter(Boolean);
    const numbers = parts.map(Number);
    if (parts.length === 2 && numbers.every(Number.isFinite)) return { latitude: numbers[0], longitude: numbers[1] };
    return null;
  }

  async function addPlace(event) {
    event.preventDefault();
    $("place-error").textContent = "";
    for (const id of ["place-name", "place-centre", "place-radius"]) $(id).setAttribute("aria-invalid", "false");
    const centre = centreOf($("place-centre").value);
    if (!centre) {
      $("place-error").textContent = "Not added: give where as latitude, longitude (52.52, 13.405).";
      $("place-centre").setAttribute("aria-invalid", "true");
      $("place-centre").focus();
      return;
    }
    const body = { name: $("place-name").value, ...centre, radius_m: Number($("place-radius").value) };
    try {
      await api("POST", `${ownerPath()}/places`, body);
      $("place-name").value = "";
      $("place-centre").value = "";
      say(`Place ${body.name} added.`);
      await loadPlaces();
    } catch (error) {
      const fields = error.fields();
      const box = { name: "place-name", latitude: "place-centre", longitude: "place-centre", radius_m: "place-radius" };
      const wrong = Object.keys(fields).map((field) => box[field]).filter(Boolean);
      for (const id of wrong) $(id).setAttribute("aria-invalid", "true");
      $("place-error").textContent = `Not added: ${Object.entries(fields).map(([f, m]) => `${f}: ${m}`).join("; ") || error.message}.`;
      if (wrong.length) $(wrong[0]).focus();
    }
  }

  // -- quiet hours --------------------------------------------------------------------------

  async function loadQuiet() {
    const { data } = await api("GET", `${ownerPath()}/quiet-hours`);
    $("quiet-list").replaceChildren(...data.quiet_hours.map(quietItem));
    const own = data.quiet_hours.find((quiet) => quiet.source === null);
    if (own) {
      $("quiet-start").value = own.start;
      $("quiet-end").value = own.end;
      $("quiet-zone").value = own.zone;
    }
  }

  function quietItem(quiet) {
    const item = document.createElement("li");
    item.className = "quiet";
    const text = document.createElement("span");
    const saver = quiet.source ? ` · from ${quiet.source}` : "";
    const now = quiet.quiet_until ? ` · quiet now, until ${new Date(quiet.quiet_until).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })}` : "";
    text.textContent = `${quiet.start} to ${quiet.end} (${quiet.zone})${saver}${now}`;
    item.append(text);
    if (quiet.source === null) {
      const drop = button("Clear", "Clear your quiet hours");
      drop.addEventListener("click", async () => {
        try {
          await api("DELETE", `${ownerPath()}/quiet-hours`);
          say("Quiet hours cleared.");
          await loadQuiet();
          $("quiet-start").focus();
        } catch (error) {
          say(`Not cleared: ${error.message}.`, true);
        }
      });
      item.append(drop);
    }
    return item;
  }

  async function saveQuiet(event) {
    event.preventDefault();
    $("quiet-error").textContent = "";
    const boxes = { start: "quiet-start", end: "quiet-end", zone: "quiet-zone" };
    for (const id of Object.values(boxes)) $(id).setAttribute("aria-invalid", "false");
    const body = { start: $("quiet-start").value, end: $("quiet-end").value, zone: $("quiet-zone").value.trim() };
    try {
      await api("PUT", `${ownerPath()}/quiet-hours`, body);
      say(`Quiet hours saved: ${body.start} to ${body.end}.`);
      await loadQuiet();
    } catch (error) {
      const fields = error.fields();
      const wrong = Object.keys(fields).map((field) => boxes[field]).filter(Boolean);
      for (const id of wrong) $(id).setAttribute("aria-invalid", "true");
      $("quiet-error").textContent = `Not saved: ${Object.entries(fields).map(([f, m]) => `${f}: ${m}`).join("; ") || error.message}.`;
      if (wrong.length) $(wrong[0]).focus();
    }
  }

  // -- shared lists -------------------------------------------------------------------------

  async function loadLists() {
    const { data } = await api("GET", "/v1/lists");
    const items = await Promise.all(data.lists.map(listItem));
    $("lists-list").replaceChildren(...items);
  }

  const memberText = (m) => `${m.member} (${m.role}${m.state === "invited" ? ", invited" : ""})`;

  /** One list: its members, its pending reminders and whom each is for, and what this
   * member may do (accept, leave, invite, remind the list, and an owner delete it). */
  async function listItem(shared) {
    const me = shared.members.find((m) => m.member === state.owner);
    const joined = me && me.state === "joined";
    const item = document.createElement("li");
    item.className = "shared-list";
    item.dataset.list = shared.id;
    const title = document.createElement("h3");
    title.textContent = shared.name;
    const members = document.createElement("p");
    members.className = "members";
    members.textContent = shared.members.map(memberText).join(" · ");
    const error = document.createElement("p");
    error.className = "error";
    error.setAttribute("aria-live", "polite");
    item.append(title, members);
    if (joined) item.append(await listReminders(shared));
    const actions = document.createElement("div");
    actions.className = "actions";
    if (me && !joined) actions.append(listAction("Accept", `Accept the invitation to ${shared.name}`, "POST", `/members/${encodeURIComponent(me.member)}/accept`, shared, error));
    if (me) actions.append(listAction("Leave", `Leave ${shared.name}`, "DELETE", `/members/${encodeURIComponent(me.member)}`, shared, error));
    if (joined && me.role !== "viewer") item.append(remindForm(shared, error));
    if (joined && me.role === "owner") item.append(inviteForm(shared, error));
    if (joined && me.role === "owner") {
      const deleting = button("Delete list", `Delete ${shared.name}`);
      deleting.addEventListener("click", () => askDeleteList(shared, actions, error));
      actions.append(deleting);
    }
    item.append(actions, error);
    return item;
  }

  /** Deleting a list asks first, as a reminder's delete does: its reminders stop ringing. */
  function askDeleteList(shared, actions, error) {
    const deleteList = async () => {
      try {
        await api("DELETE", `/v1/lists/${encodeURIComponent(shared.id)}`);
        say(`Deleted ${shared.name}; its reminders are cancelled.`);
        await loadLists();
      } catch (failure) {
        actions.hidden = false;
        tell(error, `Not deleted: ${failure.message}.`, true);
      }
    };
    askFirst(actions, shared.name, shared.name, "Its reminders will not ring for anyone.", deleteList, () => {});
  }

  async function listReminders(shared) {
    const { data } = await api("GET", `/v1/reminders?list=${encodeURIComponent(shared.id)}&status=pending&limit=50`);
    const list = document.createElement("ul");
    list.className = "list-reminders";
    for (const reminder of data.reminders) {
      const line = document.createElement("li");
      const when = reminder.next_local ? Words.localTime(reminder.next_local, reminder.zone) : "";
      line.textContent = `${reminder.text} — ${when} · for ${reminder.assignee || "everyone"}`;
      list.append(line);
    }
    return list;
  }

  function listAction(label, name, method, tail, shared, error) {
    const made = button(label, name);
    made.addEventListener("click", async () => {
      try {
        await api(method, `/v1/lists/${encodeURIComponent(shared.id)}${tail}`);
        say(`${label === "Leave" ? "Left" : "Joined"} ${shared.name}.`);
        await loadLists();
      } catch (failure) {
        tell(error, `Not done: ${failure.message}.`, true);
      }
    });
    return made;
  }

  function field(tag, label, attributes) {
    const made = document.createElement(tag);
    made.setAttribute("aria-label", label);
    for (const [key, value] of Object.entries(attributes)) made.setAttribute(key, value);
    return made;
  }

  function inviteForm(shared, error) {
    const form = document.createElement("form");
    form.className = "invite";
    const who = field("input", `Invite to ${shared.name}`, { placeholder: "who (ben)", maxlength: "128", autocomplete: "off" });
    const role = field("select", "Role", {});
    role.append(...["editor", "viewer", "owner"].map((r) => new Option(r, r)));
    const submit = document.createElement("button");
    submit.textContent = "Invite";
    form.append(who, role, submit);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      try {
        await api("PUT", `/v1/lists/${encodeURIComponent(shared.id)}/members/${encodeURIComponent(who.value.trim())}`, { role: role.value });
        say(`Invited ${who.value.trim()} to ${shared.name}.`);
        await loadLists();
      } catch (failure) {
        tell(error, `Not invited: ${fieldsText(failure)}.`, true);
      }
    });
    return form;
  }

  function remindForm(shared, error) {
    const form = document.createElement("form");
    form.className = "remind-list";
    const words = field("input", `Remind ${shared.name}`, { placeholder: "bins out every Tuesday at 19:00", maxlength: "500", autocomplete: "off" });
    const forWhom = field("select", "For", {});
    forWhom.append(new Option("everyone", ""), ...shared.members.map((m) => new Option(m.member, m.member)));
    const channel = field("select", "Ring by", {});
    channel.append(...(state.listChannels || []).map((c) => new Option(channelLabel(c), c)));
    const submit = document.createElement("button");
    submit.textContent = "Remind the list";
    form.append(words, forWhom, channel, submit);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const body = { list: shared.id, say: words.value, zone: zoneOfBrowser(), channel: channel.value };
      if (forWhom.value) body.assignee = forWhom.value;
      try {
        const { data } = await api("POST", "/v1/reminders", body);
        say(`Saved “${data.text}” in ${shared.name}, for ${data.assignee || "everyone"}.`);
        await loadLists();
      } catch (failure) {
        tell(error, `Not saved: ${fieldsText(failure)}.`, true);
      }
    });
    return form;
  }

  const fieldsText = (failure) => Object.entries(failure.fields()).map(([f, m]) => `${f}: ${m}`).join("; ") || failure.message;

  async function createList(event) {
    event.preventDefault();
    $("list-error").textContent = "";
    $("list-name").setAttribute("aria-invalid", "false");
    try {
      const { data } = await api("POST", "/v1/lists", { name: $("list-name").value });
      $("list-name").value = "";
      say(`List ${data.name} created.`);
      await loadLists();
    } catch (failure) {
      $("list-error").textContent = `Not created: ${fieldsText(failure)}.`;
      $("list-name").setAttribute("aria-invalid", "true");
      $("list-name").focus();
    }
  }

  // -- start --------------------------------------------------------------------------------

  function wire() {
    $("sign-in-form").addEventListener("submit", (event) => {
      event.preventDefault();
      signIn($("token").value.trim());
    });
    $("sign-out").addEventListener("click", () => signOut("Signed out."));
    $("notify").addEventListener("click", async () => {
      await Notification.requestPermission();
      showNotifyButton();
    });
    $("create-form").addEventListener("submit", create);
    $("new-say").addEventListener("input", schedulePreview);
    $("new-where").addEventListener("change", whereChanged);
    $("new-zone").addEventListener("input", schedulePreview);
    $("filter").addEventListener("change", reloadReminders);
    $("more").addEventListener("click", () => drawMore());
    // A refusal of the channel no longer applies once another is chosen.
    $("new-channel").addEventListener("change", () => clearErrors({ channel: createPlaces().channel }));
    $("contact-kind").addEventListener("change", contactKindChanged);
    $("contact-form").addEventListener("submit", addContact);
    $("place-form").addEventListener("submit", addPlace);
    $("quiet-form").addEventListener("submit", saveQuiet);
    $("list-form").addEventListener("submit", createList);
    // Browsers let a page play sound only after the person used it once.
    const unlock = () => {
      state.audio = state.audio || new AudioContext();
      state.audio.resume();
    };
    document.addEventListener("pointerdown", unlock, { once: true });
    document.addEventListener("keydown", unlock, { once: true });
    setInterval(refreshWords, 30000);
  }

  function start() {
    wire();
    registerWorker();
    $("new-zone").value = zoneOfBrowser();
    $("quiet-zone").value = zoneOfBrowser();
    fillZones();
    fillChannels($("new-channel"), "inapp");
    contactKindChanged();
    // A sign-in link (`tocsin serve` prints one) carries the token in its fragment, which
    // is never sent to the server: keep it, and take it out of the address bar and history.
    const fromLink = new URLSearchParams(location.hash.slice(1)).get("token");
    if (fromLink) history.replaceState(null, "", location.pathname + location.search);
    const token = fromLink || localStorage.getItem(TOKEN_KEY);
    if (token) signIn(token);
    else showSignIn("");
  }

  start();
})();
