// What is worth telling a person who is away: the page's copy of the hub's `Notices`
// (host/client-protocol/src/notice.rs), which the terminal client and the daemon's `[[notify]]` hooks
// share. The plugin's `status` is display-only text (SPEC §2.4), so the moments are read from
// the labels the bundled plugin sends (SPEC §9.1): a pane entering `needs_attention`, `idle`
// with detail `resumed` or `auto-continued`, and every `attention`.

/** The events that call the person back; the page counts them as unread in its title. */
export const CALLS_BACK = new Set(["attention", "needs_attention"]);

/** The event a report announces when a pane enters it; null for the rest. */
function eventOf(report) {
  if (!report) return null;
  if (report.state === "needs_attention") return "needs_attention";
  if (report.state === "idle" && report.detail === "auto-continued") return "auto_continued";
  if (report.state === "idle" && report.detail === "resumed") return "resumed";
  return null;
}

/** One line a person reads on a lock screen: what happened, then the plugin's detail (Rust
 *  `Notice::text`). */
export function noticeText(notice) {
  const what = {
    attention: "wants you back",
    needs_attention: "needs you",
    auto_continued: "carried on after the usage limit (auto-continue)",
    resumed: "resumed after the usage limit",
  }[notice.event];
  const detail = notice.report && notice.report.detail;
  if (CALLS_BACK.has(notice.event) && detail && detail.trim()) {
    return `pane ${notice.pane} ${what}: ${detail}`;
  }
  return `pane ${notice.pane} ${what}`;
}

/** Reads one attachment's messages and says which are news worth a notice: each event once
 *  when a pane enters it (a repeated report is not news), nothing from the replay before
 *  `live`, and an `attention` that follows the `needs_attention` it belongs to folded into
 *  that one notice (the bundled plugin sends both for one call-back). */
export class Notices {
  constructor() {
    this.startOver();
  }

  startOver() {
    this.live = false;
    this.reports = new Map();
    this.announcedNeedsAttention = new Set();
  }

  /** The notice `message` makes, `{pane, event, report}`, or null. */
  observe(message) {
    switch (message.type) {
      case "hello":
        this.startOver();
        return null;
      case "live":
        this.live = true;
        return null;
      case "recovery": {
        const event = eventOf(message);
        const entered = event !== null && eventOf(this.reports.get(message.pane)) !== event;
        this.reports.set(message.pane, message);
        this.announcedNeedsAttention.delete(message.pane);
        if (!entered || !this.live) return null;
        if (event === "needs_attention") this.announcedNeedsAttention.add(message.pane);
        return { pane: message.pane, event, report: message };
      }
      case "attention": {
        if (this.announcedNeedsAttention.delete(message.pane) || !this.live) return null;
        return { pane: message.pane, event: "attention", report: this.reports.get(message.pane) || null };
      }
      case "closed":
        this.reports.delete(message.pane);
        this.announcedNeedsAttention.delete(message.pane);
        return null;
      default:
        return null;
    }
  }
}
