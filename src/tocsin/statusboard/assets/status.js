// The status board page: polls GET /v1/status and draws it as SVG charts.
// Hand-written, no library: the page's Content-Security-Policy allows this file only.
"use strict";

const POLL_MS = 5000;
const KEY_ITEM = "tocsin.adminKey";
const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 720;
const HEIGHT = 180;
const PAD = { left: 48, right: 8, top: 8, bottom: 22 };

function storedKey() {
  return window.localStorage.getItem(KEY_ITEM);
}

function element(name, attributes, text) {
  const made = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes || {})) made.setAttribute(key, value);
  if (text !== undefined) made.textContent = text;
  return made;
}

function clockTime(iso) {
  return iso.slice(11, 16); // HH:MM, UTC
}

// A chart frame: the SVG, its y scale (0..top) and the x position of column i of n.
function frame(container, label, top, count) {
  const svg = element("svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    role: "img",
    "aria-label": label,
  });
  const plotWidth = WIDTH - PAD.left - PAD.right;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const y = (value) => PAD.top + plotHeight - (top ? (value / top) * plotHeight : 0);
  const x = (index) => PAD.left + (index * plotWidth) / count;
  svg.append(element("line", { class: "axis", x1: PAD.left, x2: WIDTH - PAD.right, y1: y(0), y2: y(0) }));
  svg.append(element("line", { class: "axis", x1: PAD.left, x2: PAD.left, y1: PAD.top, y2: y(0) }));
  svg.append(element("text", { x: PAD.left - 4, y: y(top) + 10, "text-anchor": "end" }, format(top)));
  svg.append(element("text", { x: PAD.left - 4, y: y(0), "text-anchor": "end" }, "0"));
  container.replaceChildren(svg);
  return { svg, x, y, step: plotWidth / count };
}

function format(value) {
  if (value >= 10000) return `${Math.round(value / 1000)}k`;
  return Number.isInteger(value) ? String(value) : value.toFixed(2);
}

function niceTop(values) {
  const top = Math.max(0, ...values);
  if (top <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(top));
  for (const step of [1, 2, 5, 10]) if (top <= step * power) return step * power;
  return top;
}

function timeLabels(chart, minutes) {
  minutes.forEach((minute, index) => {
    const last = index === minutes.length - 1;
    if (index % 10 === 0 || last) {
      const x = last ? WIDTH - PAD.right : chart.x(index);
      const anchor = last ? "end" : "start";
      chart.svg.append(
        element("text", { x, y: HEIGHT - 6, "text-anchor": anchor }, clockTime(minute.minute)),
      );
    }
  });
}

// Stacked bars, one column per minute: `series` are [field, css class] pairs.
function bars(container, label, minutes, series, cap) {
  const totals = minutes.map((m) => series.reduce((sum, [field]) => sum + m[field], 0));
  const chart = frame(container, label, niceTop(totals), minutes.length);
  let drawn = 0;
  minutes.forEach((minute, index) => {
    let base = 0;
    for (const [field, css] of series) {
      const value = minute[field];
      if (!value) continue;
      const rect = element("rect", {
        class: `bar-${css}`,
        x: chart.x(index) + 1,
        width: Math.max(1, chart.step - 2),
        y: chart.y(base + value),
        height: chart.y(base) - chart.y(base + value),
        "data-minute": minute.minute,
        "data-series": field,
        "data-value": value,
      });
      rect.append(element("title", {}, `${clockTime(minute.minute)} UTC: ${value} ${field}`));
      chart.svg.append(rect);
      drawn += 1;
      base += value;
    }
    if (cap && totals[index] >= cap) {
      chart.svg.append(element("circle", { class: "capped", cx: chart.x(index) + chart.step / 2, cy: PAD.top + 3, r: 3 }));
    }
  });
  chart.svg.setAttribute("data-bars", drawn);
  timeLabels(chart, minutes);
}

function lines(container, label, minutes) {
  const keys = ["p50", "p99", "max"];
  const values = minutes.flatMap((m) => (m.lateness ? keys.map((k) => m.lateness[k]) : []));
  const chart = frame(container, label, niceTop(values), minutes.length);
  let points = 0;
  for (const key of keys) {
    const path = [];
    minutes.forEach((minute, index) => {
      if (!minute.lateness) return;
      const x = chart.x(index) + chart.step / 2;
      const y = chart.y(minute.lateness[key]);
      path.push(`${path.length ? "L" : "M"}${x.toFixed(1)},${y.toFixed(1)}`);
      const dot = element("circle", { class: `line-${key}`, cx: x, cy: y, r: 2, "data-series": key, "data-value": minute.lateness[key] });
      dot.append(element("title", {}, `${clockTime(minute.minute)} UTC ${key}: ${minute.lateness[key]} s`));
      chart.svg.append(dot);
      points += 1;
    });
    if (path.length) chart.svg.append(element("path", { class: `line line-${key}`, d: path.join(" ") }));
  }
  chart.svg.setAttribute("data-points", points);
  timeLabels(chart, minutes);
}

function queue(container, depth) {
  // `quiet`: of the queued, bulk rings waiting for their owner's quiet hours to end.
  const rows = [["queued", depth.queued], ["sending", depth.sending], ["quiet", depth.quiet]];
  const top = niceTop(rows.map(([, value]) => value));
  const svg = element("svg", { viewBox: `0 0 ${WIDTH} 100`, role: "img", "aria-label": "Queue depth by state, and the queued held by quiet hours" });
  rows.forEach(([state, value], index) => {
    const y = 6 + index * 30;
    const width = ((WIDTH - 200) * value) / top;
    svg.append(element("text", { x: 0, y: y + 15 }, state));
    svg.append(element("rect", { class: `bar-${state}`, x: 80, y, height: 20, width: Math.max(width, 1), "data-series": state, "data-value": value }));
    const shown = value >= depth.cap ? `≥ ${value}` : String(value);
    svg.append(element("text", { x: 86 + width, y: y + 15 }, shown));
  });
  container.replaceChildren(svg);
}

function cell(text, css) {
  const td = document.createElement("td");
  td.textContent = text;
  if (css) td.className = css;
  return td;
}

/** How many parts a worker holds, then which: "2 (parts 0, 3)"; a lone number would read
 * as a count. */
function partsHeld(parts) {
  if (!parts.length) return "0";
  return `${parts.length} (${parts.length === 1 ? "part" : "parts"} ${parts.join(", ")})`;
}

function workers(board) {
  const body = document.querySelector("#workers tbody");
  // Each cell names its column: on a phone the rows are drawn as cards, without the head.
  const labels = [...document.querySelectorAll("#workers thead th")].map((th) => th.textContent);
  body.replaceChildren(
    ...board.workers.map((worker) => {
      const row = document.createElement("tr");
      row.dataset.worker = worker.id;
      row.append(
        cell(worker.id),
        cell(worker.alive ? "yes" : "no"),
        cell(worker.heartbeat_at.replace("T", " ").replace("Z", " UTC")),
        cell(partsHeld(worker.parts), "parts"),
        cell(worker.breakers.join(", ") || "—"),
      );
      row.querySelectorAll("td").forEach((td, n) => { td.dataset.label = labels[n]; });
      return row;
    }),
  );
  const held = board.workers.filter((w) => w.alive).reduce((sum, w) => sum + w.parts.length, 0);
  const alive = board.workers.filter((w) => w.alive).length;
  document.getElementById("parts-summary").textContent =
    `${alive} alive; ${held} of ${board.parts} parts held.`;
}

function breakers(board) {
  const list = document.getElementById("breakers");
  if (!board.breakers.length) {
    const none = document.createElement("li");
    none.className = "none";
    none.textContent = "None open.";
    list.replaceChildren(none);
    return;
  }
  list.replaceChildren(
    ...board.breakers.map((breaker) => {
      const item = document.createElement("li");
      item.textContent = `${breaker.provider} (worker ${breaker.worker})`;
      return item;
    }),
  );
}

function draw(board) {
  workers(board);
  const ahead = board.ahead;
  const due = ahead.minutes.reduce((sum, m) => sum + m.due, 0);
  document.getElementById("ahead-summary").textContent =
    `${due} due in the next hour; ${ahead.overdue} overdue.` +
    (ahead.minutes.some((m) => m.due >= ahead.cap) ? ` A dot marks a minute of at least ${ahead.cap}.` : "");
  bars(document.getElementById("ahead-chart"), "Reminders due per minute, next hour", ahead.minutes, [["due", "due"]], ahead.cap);
  const outcomes = [["sent", "sent"], ["failed", "failed"], ["expired", "expired"], ["waiting", "waiting"]];
  bars(document.getElementById("rings-chart"), "Rings per minute by outcome, last hour", board.rings.minutes, outcomes, board.rings.per_minute);
  lines(document.getElementById("lateness-chart"), "Lateness per minute, last hour", board.rings.minutes);
  queue(document.getElementById("queue-chart"), board.queue);
  breakers(board);
}

function say(text, error) {
  const state = document.getElementById("state");
  state.textContent = text;
  state.classList.toggle("error", Boolean(error));
}

function askForKey(detail) {
  say(detail, true);
  document.getElementById("key-form").hidden = false;
}

let timer = 0;

async function poll() {
  window.clearTimeout(timer);
  const key = storedKey();
  const headers = key ? { Authorization: `Bearer ${key}` } : {};
  try {
    const answer = await fetch("/v1/status", { headers, cache: "no-store" });
    if (answer.status === 401 || answer.status === 403) {
      const problem = await answer.json();
      askForKey(`${problem.detail}. Enter an admin key.`);
      return;
    }
    if (!answer.ok) {
      const problem = await answer.json().catch(() => ({ detail: answer.statusText }));
      say(`The server answered ${answer.status}: ${problem.detail}`, true);
      return;
    }
    const board = await answer.json();
    draw(board);
    document.body.dataset.asOf = board.as_of;
    say(`As of ${board.as_of.replace("T", " ").replace("Z", " UTC")}; refreshed every ${POLL_MS / 1000} s.`);
  } catch (error) {
    say(`The server cannot be reached: ${error.message}`, true);
  } finally {
    timer = window.setTimeout(poll, POLL_MS);
  }
}

function start() {
  const form = document.getElementById("key-form");
  const forget = document.getElementById("forget");
  forget.hidden = !storedKey();
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const field = document.getElementById("key");
    window.localStorage.setItem(KEY_ITEM, field.value.trim());
    field.value = "";
    form.hidden = true;
    forget.hidden = false;
    say("Loading…");
    poll();
  });
  forget.addEventListener("click", () => {
    window.localStorage.removeItem(KEY_ITEM);
    forget.hidden = true;
    say("Key forgotten.");
  });
  poll();
}

start();
