// Times and repeat rules in words, for the reminders page: pure functions, no DOM, no API.
"use strict";

window.Words = (() => {
  const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
  const DAY_NAMES = {
    MO: "Monday", TU: "Tuesday", WE: "Wednesday", TH: "Thursday", FR: "Friday",
    SA: "Saturday", SU: "Sunday",
  };
  const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  const UNITS = {
    MINUTELY: "minute", HOURLY: "hour", DAILY: "day", WEEKLY: "week", MONTHLY: "month",
    YEARLY: "year",
  };
  const ORDINALS = { "-1": "last", "-2": "second to last", 1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth" };
  const relative = new Intl.RelativeTimeFormat("en", { numeric: "auto" });

  /** "2026-10-26T09:00:00-04:00" → its wall-clock parts, as written (the zone's own time). */
  function wallParts(local) {
    const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?/.exec(local);
    if (!m) return null;
    const [year, month, day, hour, minute, second] = m.slice(1).map((x) => Number(x || 0));
    return { year, month, day, hour, minute, second };
  }

  /** Today's date in `zone` as days since the epoch (to count days between dates). */
  function todayIn(zone, now = new Date()) {
    const text = new Intl.DateTimeFormat("en-CA", {
      timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit",
    }).format(now);
    const [y, m, d] = text.split("-").map(Number);
    return Date.UTC(y, m - 1, d) / 86400000;
  }

  const pad = (n) => String(n).padStart(2, "0");

  /** Whether this browser's locale reads a 12-hour clock (en-US: "6:00 PM"). */
  const TWELVE_HOURS = (() => {
    const options = new Intl.DateTimeFormat(undefined, { hour: "numeric" }).resolvedOptions();
    return options.hourCycle ? ["h11", "h12"].includes(options.hourCycle) : Boolean(options.hour12);
  })();

  /** A time of day on the locale's clock: "18:30" or "6:30 PM" (seconds only when set). */
  function clock(hour, minute, second = 0) {
    const tail = `${pad(minute)}${second ? ":" + pad(second) : ""}`;
    if (!TWELVE_HOURS) return `${pad(hour)}:${tail}`;
    return `${hour % 12 || 12}:${tail} ${hour < 12 ? "AM" : "PM"}`;
  }

  /** A time to type, shown as the locale writes it, for an example in a field. */
  const example = () => `tomorrow ${clock(18, 30)}`;

  /** A local wall time as a person says it: "today 09:00", "tomorrow 18:30", "Mon 09:00",
   *  "Tue 3 Nov 09:00", or with the year when it is not this one. */
  function localTime(local, zone, now = new Date()) {
    const p = wallParts(local);
    if (!p) return local;
    const day = Date.UTC(p.year, p.month - 1, p.day) / 86400000;
    const at = clock(p.hour, p.minute, p.second);
    const ahead = day - todayIn(zone, now);
    if (ahead === 0) return `today ${at}`;
    if (ahead === 1) return `tomorrow ${at}`;
    const weekday = DAYS[new Date(day * 86400000).getUTCDay()];
    if (ahead > 1 && ahead < 7) return `${weekday} ${at}`;
    const thisYear = new Date(todayIn(zone, now) * 86400000).getUTCFullYear();
    const year = p.year === thisYear ? "" : ` ${p.year}`;
    return `${weekday} ${p.day} ${MONTHS[p.month - 1]}${year} ${at}`;
  }

  /** A UTC instant shown on `zone`'s clock, in the same words as `localTime`. */
  function instant(utc, zone, now = new Date()) {
    return localTime(wallOf(utc, zone), zone, now);
  }

  /** A UTC instant as the wall time it is in `zone`: "2026-10-26T09:00:00". */
  function wallOf(utc, zone) {
    const parts = new Intl.DateTimeFormat("en-CA", {
      timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit",
      hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23",
    }).formatToParts(new Date(utc));
    const get = (type) => parts.find((x) => x.type === type).value;
    return `${get("year")}-${get("month")}-${get("day")}T${get("hour")}:${get("minute")}:${get("second")}`;
  }

  /** Whether a UTC instant falls today on `zone`'s clock. */
  function isToday(utc, zone, now = new Date()) {
    const p = wallParts(wallOf(utc, zone));
    return Date.UTC(p.year, p.month - 1, p.day) / 86400000 === todayIn(zone, now);
  }

  /** A reminder's time as its owner would type it again: the repeat as written, or the
   *  one-off's wall time in its zone on the locale's clock ("2026-12-24 18:00" or
   *  "2026-12-24 6:00 PM", both read back by the server), never a UTC instant. */
  function whenOf(reminder) {
    if (reminder.repeat) return reminder.repeat;
    if (!reminder.at) return "";
    const wall = /[zZ]$|[+-]\d\d:?\d\d$/.test(reminder.at) ? wallOf(reminder.at, reminder.zone) : reminder.at;
    const p = wallParts(wall);
    if (!p) return reminder.at;
    return `${p.year}-${pad(p.month)}-${pad(p.day)} ${clock(p.hour, p.minute, p.second)}`;
  }

  /** How far an instant is from now: "in 3 hours", "in 5 minutes", "2 days ago", "now". */
  function fromNow(utc, now = new Date()) {
    const seconds = (new Date(utc) - now) / 1000;
    const size = Math.abs(seconds);
    if (size < 45) return relative.format(Math.round(seconds), "second");
    if (size < 3600 * 1.5) return relative.format(Math.round(seconds / 60), "minute");
    if (size < 86400 * 1.5) return relative.format(Math.round(seconds / 3600), "hour");
    return relative.format(Math.round(seconds / 86400), "day");
  }

  function list(items) {
    if (items.length < 2) return items.join("");
    return `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`;
  }

  function days(byday) {
    const codes = byday.split(",");
    if (codes.join(",") === "MO,TU,WE,TH,FR") return "weekdays";
    if (codes.join(",") === "SA,SU") return "weekends";
    return list(codes.map((code) => {
      const m = /^([+-]?\d+)?([A-Z]{2})$/.exec(code);
      if (!m) return code;
      const name = DAY_NAMES[m[2]] || m[2];
      return m[1] ? `the ${ORDINALS[Number(m[1])] || m[1] + "th"} ${name}` : name;
    }));
  }

  function times(rule) {
    const hours = (rule.BYHOUR || "").split(",").filter(Boolean);
    const minutes = (rule.BYMINUTE || "0").split(",");
    if (!hours.length) return rule.BYMINUTE ? ` at minute ${list(minutes)}` : "";
    return ` at ${list(hours.flatMap((h) => minutes.map((m) => clock(Number(h), Number(m)))))}`;
  }

  /** An RRULE body ("FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0") in words. */
  function rule(text) {
    const parts = Object.fromEntries(
      text.replace(/^RRULE:/i, "").split(";").map((part) => part.split("=")),
    );
    const unit = UNITS[parts.FREQ] || "time";
    const interval = Number(parts.INTERVAL || 1);
    let words = interval === 1 ? `every ${unit}` : `every ${interval} ${unit}s`;
    if (parts.BYDAY) {
      const on = days(parts.BYDAY);
      words = parts.FREQ === "WEEKLY" && interval === 1 ? `every ${on}` : `${words} on ${on}`;
      if (on === "weekdays" || on === "weekends") words = words.replace(`every ${on}`, on);
    }
    if (parts.BYMONTHDAY) words += ` on day ${list(parts.BYMONTHDAY.split(","))}`;
    if (parts.BYMONTH) {
      words += ` in ${list(parts.BYMONTH.split(",").map((m) => MONTHS[Number(m) - 1]))}`;
    }
    words += times(parts);
    if (parts.COUNT) words += `, ${parts.COUNT} times`;
    if (parts.UNTIL) words += `, until ${parts.UNTIL.slice(0, 4)}-${parts.UNTIL.slice(4, 6)}-${parts.UNTIL.slice(6, 8)}`;
    return words;
  }

  /** A reminder's repeat in words: the phrase as the person wrote it, an RRULE described,
   *  or "once". */
  function repeat(reminder) {
    if (!reminder.rule) return "once";
    const given = reminder.repeat || "";
    if (given && !/^(RRULE:|FREQ=)/i.test(given.trim())) return given;
    return rule(reminder.rule);
  }

  return Object.freeze({ localTime, instant, fromNow, rule, repeat, isToday, whenOf, example, clock });
})();
