// The reminders page: one owner's reminders, contacts and live rings, through the public
// API with the owner's token. No framework and no build step: the DOM, fetch, EventSource.
"use strict";

(() => {
  const TOKEN_KEY = "tocsin.token";
  const PAGE_SIZE = 20;
  const PREVIEW_COUNT = 5;
  const PREVIEW_DELAY_MS = 300; // typing pauses this long before a preview is asked for
  const FEED_RETRY_MS = 3000;
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
  // A one-off's time: 2026-12-24 18:00, 2026-12-24T18:00:30, …Z or …+01:00.
  const AT = /^(\d{4}-\d{2}-\d{2})[T ](\d{1,2}):(\d{2})(:\d{2})?(Z|[+-]\d{2}:?\d{2})?$/i;

  const $ = (id) => document.getElementById(id);
  const state = {
    token: null,
    owner: null,
    cursor: null,
    listRound: 0,
    feed: null,
    feedRound: 0,
    previewRound: 0,
    previewTimer: 0,
    seen: new Set(),
    audio: null,
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
      signOut("Your sign-in is not valid any more (the token expired or was replaced): sign in again.");
    }
    if (!response.ok) throw new ApiError(response.status, data || {});
    return { status: response.status, data, etag: response.headers.get("ETag") };
  }

  const ownerPath = () => `/v1/owners/${encodeURIComponent(state.owner)}`;

  function say(message) {
    $("status").textContent = message;
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
    localStorage.setItem(TOKEN_KEY, token);
    $("owner-name").textContent = owner;
    $("sign-in").hidden = true;
    $("account").hidden = false;
    $("app").hidden = false;
    showNotifyButton();
    loadContacts().catch((error) => say(`Contacts: ${error.message}.`));
    openFeed();
  }

  function signOut(message) {
    localStorage.removeItem(TOKEN_KEY);
    closeFeed();
    state.token = null;
    state.owner = null;
    $("reminder-list").replaceChildren();
    $("contact-list").replaceChildren();
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
    const snooze = button("Snooze 10 min", `Snooze “${event.text}” 10 minutes`);
    const dismiss = button("Dismiss", `Dismiss “${event.text}”`);
    snooze.addEventListener("click", async () => {
      try {
        const { data } = await api("PATCH", `/v1/reminders/${event.reminder_id}`, { snooze: "10m" });
        say(`Snoozed “${event.text}”: it rings again ${Words.fromNow(data.next)}.`);
        dismissRing(item);
        loadReminders();
      } catch (error) {
        answer.textContent = `Not snoozed: ${error.message}.`;
      }
    });
    dismiss.addEventListener("click", () => dismissRing(item));
    item.append(text, due, document.createElement("br"), snooze, dismiss, answer);
    $("rings").prepend(item);
    $("ringing").hidden = false;
    sound();
    notify(event);
    loadReminders();
  }

  function dismissRing(item) {
    const wasFocused = item.contains(document.activeElement);
    item.remove();
    const next = $("rings").querySelector("button");
    $("ringing").hidden = !$("rings").children.length;
    if (wasFocused) (next || $("new-text")).focus();
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
    new Notification("Tocsin", { body: event.text, tag: event.id });
  }

  function showNotifyButton() {
    $("notify").hidden = !("Notification" in window) || Notification.permission !== "default";
  }

  // -- creating -----------------------------------------------------------------------------

  const zoneOfBrowser = () => Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";

  /** What "When" says: `{at}` for a time, `{repeat}` for anything else (a phrase, an RRULE). */
  function schedule(when) {
    const text = when.trim();
    const match = AT.exec(text);
    if (!match) return { repeat: text };
    const [, date, hour, minute, second, offset] = match;
    return { at: `${date}T${hour.padStart(2, "0")}:${minute}${second || ""}${offset || ""}` };
  }

  function fillChannels(select, chosen) {
    select.replaceChildren(...CHANNELS.map(([value, label]) => new Option(label, value, false, value === chosen)));
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
    text: { input: $("new-text"), error: $("create-answer") },
    at: { input: $("new-when"), error: $("new-when-error") },
    repeat: { input: $("new-when"), error: $("new-when-error") },
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
    const when = $("new-when").value.trim();
    const zone = $("new-zone").value.trim();
    const round = ++state.previewRound;
    const places = createPlaces();
    if (!when || !zone) {
      showPreview([], zone);
      return;
    }
    try {
      const { data } = await api("POST", "/v1/occurrences", { zone, ...schedule(when), count: PREVIEW_COUNT });
      if (round !== state.previewRound) return;
      clearErrors({ at: places.at, zone: places.zone });
      showPreview(data.occurrences, zone);
    } catch (error) {
      if (round !== state.previewRound) return;
      showPreview([], zone);
      if (!showErrors(error, { at: places.at, repeat: places.repeat, zone: places.zone })) {
        $("new-when-error").textContent = error.message;
      }
    }
  }

  function showPreview(occurrences, zone) {
    const items = occurrences.map((o) => {
      const item = document.createElement("li");
      const time = document.createElement("time");
      time.dateTime = o.at;
      time.textContent = Words.localTime(o.local, zone);
      item.append(time, ` — ${Words.fromNow(o.at)}`);
      return item;
    });
    $("preview-list").replaceChildren(...items);
    $("preview-title").hidden = !items.length;
  }

  async function create(event) {
    event.preventDefault();
    const places = createPlaces();
    clearErrors(places);
    const body = {
      text: $("new-text").value,
      zone: $("new-zone").value.trim(),
      channel: $("new-channel").value,
      ...schedule($("new-when").value),
    };
    try {
      const { data } = await api("POST", "/v1/reminders", body);
      $("create-answer").textContent = `Saved “${data.text}”: it rings ${Words.localTime(data.next_local, data.zone)} (${Words.fromNow(data.next)}).`;
      $("new-text").value = "";
      $("new-when").value = "";
      showPreview([], body.zone);
      $("new-text").focus();
      await loadReminders();
    } catch (error) {
      if (!showErrors(error, places)) $("create-answer").textContent = `Not saved: ${error.message}.`;
      const wrong = Object.values(places).find((p) => p.input.getAttribute("aria-invalid") === "true");
      if (wrong) wrong.input.focus();
    }
  }

  // -- the list -----------------------------------------------------------------------------

  function button(label, accessibleName) {
    const made = document.createElement("button");
    made.type = "button";
    made.textContent = label;
    if (accessibleName) made.setAttribute("aria-label", accessibleName);
    return made;
  }

  /** The first page again (`more` false), or the next page after the ones shown. */
  async function loadReminders(more = false) {
    const round = more ? state.listRound : ++state.listRound;
    const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
    const status = $("filter").value;
    if (status) query.set("status", status);
    if (more && state.cursor) query.set("cursor", state.cursor);
    const { data } = await api("GET", `/v1/reminders?${query}`);
    if (round !== state.listRound) return; // a newer load replaced the list meanwhile
    const items = data.reminders.map(reminderItem);
    if (more) $("reminder-list").append(...items);
    else $("reminder-list").replaceChildren(...items);
    state.cursor = data.next_cursor;
    $("more").hidden = !state.cursor;
    $("reminders-empty").hidden = $("reminder-list").children.length > 0;
  }

  const STATUS_WORDS = { fired: "rang", ended: "ended", cancelled: "cancelled" };

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
    } else {
      q(".next").textContent = STATUS_WORDS[reminder.status] || reminder.status;
    }
    q(".repeat").textContent = `${Words.repeat(reminder)} (${reminder.zone})`;
    const channel = CHANNELS.find(([value]) => value === reminder.channel);
    q(".channel").textContent = `by ${channel ? channel[1] : reminder.channel}`;
    if (reminder.last_firing) q(".last").textContent = ` · last ring: ${reminder.last_firing.state}`;
    const name = `“${reminder.text}”`;
    q(".snooze summary").setAttribute("aria-label", `Snooze ${name}`);
    q(".edit").setAttribute("aria-label", `Edit ${name}`);
    q(".delete").setAttribute("aria-label", `Delete ${name}`);
    q(".history summary").setAttribute("aria-label", `History of ${name}`);
    for (const choice of item.querySelectorAll("[data-snooze]")) {
      choice.addEventListener("click", () => snooze(item, reminder, choice.dataset.snooze));
    }
    q(".edit").addEventListener("click", () => edit(item, reminder));
    q(".delete").addEventListener("click", () => remove(item, reminder));
    q(".history").addEventListener("toggle", () => {
      if (q(".history").open) showHistory(item, reminder);
    });
    return item;
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
        answer.textContent = "Pick a time to snooze until first.";
        item.querySelector(".until").focus();
        return;
      }
      body = { snooze_until: until };
    }
    try {
      const { status, data } = await api("PATCH", `/v1/reminders/${reminder.id}`, body);
      const when = `${Words.localTime(data.next_local, data.zone)} (${Words.fromNow(data.next)})`;
      const said = status === 201 ? `Snoozed: a new reminder rings ${when}.` : `Snoozed: it rings ${when}.`;
      await loadReminders();
      const shown = $("reminder-list").querySelector(`[data-id="${data.id}"]`);
      (shown ? shown.querySelector(".answer") : $("status")).textContent = said;
      if (shown) shown.querySelector(".snooze summary").focus();
    } catch (error) {
      answer.textContent = `Not snoozed: ${error.message}.`;
    }
  }

  async function remove(item, reminder) {
    const answer = item.querySelector(".answer");
    try {
      const { status } = await api("DELETE", `/v1/reminders/${reminder.id}`);
      const onItsWay = status === 200 ? ": the ring due now is already on its way" : "";
      answer.textContent = `Deleted “${reminder.text}”${onItsWay}.`;
      item.classList.add("gone");
      item.querySelector(".actions").hidden = true;
    } catch (error) {
      answer.textContent = `Not deleted: ${error.message}.`;
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
      answer.textContent = `Cannot edit: ${error.message}.`;
      return;
    }
    const form = $("edit-template").content.firstElementChild.cloneNode(true);
    const fields = form.elements;
    const was = current.data;
    fields.text.value = was.text;
    fields.when.value = was.repeat || was.at || "";
    fields.zone.value = was.zone;
    fillChannels(fields.channel, was.channel);
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
      if (fields.when.value.trim() !== (was.repeat || was.at || "")) {
        const when = schedule(fields.when.value);
        Object.assign(change, { at: when.at || null, repeat: when.repeat || null });
      }
      if (!Object.keys(change).length) {
        close();
        return;
      }
      try {
        const { data } = await api("PATCH", `/v1/reminders/${reminder.id}`, change, { "If-Match": current.etag });
        const fresh = reminderItem(data);
        item.replaceWith(fresh);
        fresh.querySelector(".answer").textContent = "Saved.";
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
        $("contact-kind").focus();
      } catch (error) {
        say(`Not removed: ${error.message}.`);
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
    } catch (error) {
      const messages = Object.values(error.fields());
      $("contact-error").textContent = `Not added: ${messages.join("; ") || error.message}.`;
      $("contact-value").setAttribute("aria-invalid", "true");
      $("contact-value").focus();
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
    $("new-when").addEventListener("input", schedulePreview);
    $("new-zone").addEventListener("input", schedulePreview);
    $("filter").addEventListener("change", () => loadReminders().catch((e) => say(e.message)));
    $("more").addEventListener("click", () => loadReminders(true).catch((e) => say(e.message)));
    $("contact-kind").addEventListener("change", contactKindChanged);
    $("contact-form").addEventListener("submit", addContact);
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
    $("new-zone").value = zoneOfBrowser();
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
