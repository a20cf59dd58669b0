// What the tabs and the toolbar say about a pane's recovery: the same summary as the TUI's
// chip (host/tui/src/format.rs): `state · 14:05 (in 1 h 47 min) · attempt N · detail`, the
// time in the browser's local zone with how long is left, each part only when it is known —
// no deadline, no time.

/** Widest the plugin's detail may be in the chip, in characters. */
export const DETAIL_WIDTH = 40;

/** The detail the bundled plugin reports while it will continue the session by itself at
 *  the deadline: the chip says `auto-continue at 14:05 (…)` instead of repeating it. */
const AUTO_CONTINUE = "auto-continue";

/** The two report states that mean something to a client (RecoveryState in
 *  host/client-protocol/src/hub.rs); every other state is the plugin's label, only shown. */
const IDLE = "idle";
const CANCELLED = "cancelled";

/** Whether a report means recovery is under way (`idle` and `cancelled` do not). */
export function isActive(report) {
  return report.state !== IDLE && report.state !== CANCELLED;
}

/** Whether the report is the hub's word that the pane's relaunch hold ended. */
export function endsHold(report) {
  return report.state === CANCELLED;
}

/** Whether the report has a deadline (and its chip counts down). */
export function hasDeadline(report) {
  return typeof report.deadline_epoch === "number";
}

/** The browser's clock in unix seconds. */
export function nowEpoch() {
  return Math.floor(Date.now() / 1000);
}

const pad = (n) => String(n).padStart(2, "0");
const hhmm = (time) => `${pad(time.getHours())}:${pad(time.getMinutes())}`;

/** The deadline as local HH:MM, or null without one. */
export function until(report) {
  return hasDeadline(report) ? hhmm(new Date(report.deadline_epoch * 1000)) : null;
}

/** `3 h 12 min`, `45 s`, `2 days 3 h`: the two largest units that are not zero (Rust `span`). */
export function span(secs) {
  const days = Math.floor(secs / 86400);
  const hours = Math.floor(secs / 3600) % 24;
  const mins = Math.floor(secs / 60) % 60;
  if (days === 0) {
    if (hours === 0) return mins === 0 ? `${secs} s` : `${mins} min`;
    return mins === 0 ? `${hours} h` : `${hours} h ${mins} min`;
  }
  const dayText = days === 1 ? "1 day" : `${days} days`;
  return hours === 0 ? dayText : `${dayText} ${hours} h`;
}

/** A deadline as a person reads it: local `HH:MM` (with the date when it is not today) and
 *  how long until then, `14:05 (in 3 h 12 min)`, or since then, `14:05 (2 min ago)` (Rust
 *  `deadline_text`). */
export function deadlineText(epoch, now) {
  const at = new Date(epoch * 1000);
  const today = new Date(now * 1000);
  const sameDay = at.getFullYear() === today.getFullYear() && at.getMonth() === today.getMonth() && at.getDate() === today.getDate();
  const clock = sameDay ? hhmm(at) : `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())} ${hhmm(at)}`;
  const left = epoch - now;
  return left >= 0 ? `${clock} (in ${span(left)})` : `${clock} (${span(-left)} ago)`;
}

/** The tab's marker: ⏳HH:MM for a deadline, ⚠N for a retry, a bare ⏳ otherwise. */
export function marker(report) {
  let text = "";
  const time = until(report);
  if (time) text += `⏳${time}`;
  if (report.attempt > 0) text += `⚠${report.attempt}`;
  return text || "⏳";
}

/** `text` on one line, cut to `width` characters with … standing for the rest. */
export function truncate(text, width) {
  const line = Array.from(text.replace(/[\u0000-\u001f\u007f]/g, " "));
  return line.length <= width ? line.join("") : line.slice(0, width - 1).join("") + "…";
}

/** The chip at `now` (unix seconds): `state · 14:05 (in 1 h 47 min) · attempt N · detail`,
 *  or `state · auto-continue at 14:05 (in 1 h 47 min) · attempt N` when that is what the
 *  deadline brings. */
export function chipText(report, now) {
  const parts = [report.state];
  let detail = report.detail && report.detail.trim() ? report.detail : null;
  if (hasDeadline(report)) {
    const time = deadlineText(report.deadline_epoch, now);
    if (detail === AUTO_CONTINUE) {
      parts.push(`${AUTO_CONTINUE} at ${time}`);
      detail = null;
    } else {
      parts.push(time);
    }
  }
  if (report.attempt > 0) parts.push(`attempt ${report.attempt}`);
  if (detail) parts.push(truncate(detail, DETAIL_WIDTH));
  return parts.join(" · ");
}
