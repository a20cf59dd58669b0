// What the tabs and the toolbar say about a pane's recovery: the same summary as the TUI's
// chip (host/tui/src/format.rs): state · until HH:MM · attempt N · detail, the time in the
// browser's local zone, each part only when it is known — no deadline, no time.

/** Widest the plugin's detail may be in the chip, in characters. */
export const DETAIL_WIDTH = 40;

/** Whether a report means recovery is under way (`idle` and `cancelled` do not). */
export function isActive(report) {
  return report.state !== "idle" && report.state !== "cancelled";
}

/** The deadline as local HH:MM, or null without one. */
export function until(report) {
  if (typeof report.deadline_epoch !== "number") return null;
  const time = new Date(report.deadline_epoch * 1000);
  const pad = (n) => String(n).padStart(2, "0");
  return `${pad(time.getHours())}:${pad(time.getMinutes())}`;
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

/** The chip: `state · until HH:MM · attempt N · detail`. */
export function chipText(report) {
  const parts = [report.state];
  const time = until(report);
  if (time) parts.push(`until ${time}`);
  if (report.attempt > 0) parts.push(`attempt ${report.attempt}`);
  if (report.detail && report.detail.trim()) parts.push(truncate(report.detail, DETAIL_WIDTH));
  return parts.join(" · ");
}
