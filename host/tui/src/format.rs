//! What the tab row and the notice row say about a pane: its tab label with the recovery
//! marker, which tabs fit the row, and the recovery chip (SPEC §8). Pure text, measured in
//! terminal columns, so that it is table-tested without a terminal.

use std::ops::Range;

use chrono::TimeZone;
use nightcrow_client_protocol::RecoveryReport;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Widest a tab label may be, marker included; longer titles are cut, never the marker.
pub const TAB_WIDTH: usize = 28;
/// Widest the plugin's detail text may be inside the chip.
pub const DETAIL_WIDTH: usize = 40;

/// The detail the bundled plugin reports while it will continue the session by itself at
/// the deadline: the chip says `auto-continue at 14:05 (…)` instead of repeating it.
pub const AUTO_CONTINUE: &str = "auto-continue";

/// What the screen is drawn against: the time now and the zone deadlines are read in (the
/// TUI passes the wall clock and `chrono::Local`; tests a fixed pair).
#[derive(Debug, Clone, Copy)]
pub struct Clock<Tz: TimeZone> {
    pub now_epoch: i64,
    pub zone: Tz,
}

impl Clock<chrono::Local> {
    /// The wall clock in the local zone.
    pub fn local() -> Clock<chrono::Local> {
        Clock {
            now_epoch: chrono::Utc::now().timestamp(),
            zone: chrono::Local,
        }
    }
}

/// A recovery report as the screen shows it. The deadline stays an instant, so the chip
/// counts down against the clock it is drawn with (no deadline, no time: never a guess).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovery {
    pub state: String,
    pub detail: Option<String>,
    pub deadline_epoch: Option<i64>,
    pub attempt: u32,
}

impl Recovery {
    pub fn from_report(report: &RecoveryReport) -> Recovery {
        Recovery {
            state: report.state.to_string(),
            detail: report.detail.clone(),
            deadline_epoch: report.deadline_epoch,
            attempt: report.attempt,
        }
    }

    /// The tab marker: `⏳HH:MM` for a deadline (local time in `zone`), `⚠N` for a retry,
    /// both when both hold, a bare `⏳` when neither does. It does not count down: a tab
    /// stays short.
    pub fn marker<Tz: TimeZone>(&self, zone: &Tz) -> String {
        let mut marker = String::new();
        if let Some(until) = self
            .deadline_epoch
            .and_then(|epoch| zone.timestamp_opt(epoch, 0).single())
        {
            marker.push('⏳');
            marker.push_str(&until.naive_local().format("%H:%M").to_string());
        }
        if self.attempt > 0 {
            marker.push_str(&format!("⚠{}", self.attempt));
        }
        if marker.is_empty() {
            marker.push('⏳');
        }
        marker
    }

    /// The chip on the notice row at `clock`: `state · 14:05 (in 1 h 47 min) · attempt N ·
    /// detail`, or `state · auto-continue at 14:05 (in 1 h 47 min) · attempt N` when that is
    /// what the deadline brings; each part only when it is known, the detail cut to
    /// [`DETAIL_WIDTH`] columns.
    pub fn chip<Tz: TimeZone>(&self, clock: &Clock<Tz>) -> String {
        let mut parts = vec![self.state.clone()];
        let mut detail = self.detail.as_deref().filter(|d| !d.trim().is_empty());
        if let Some(epoch) = self.deadline_epoch {
            let time = deadline_text(epoch, clock.now_epoch, &clock.zone);
            if detail == Some(AUTO_CONTINUE) {
                parts.push(format!("{AUTO_CONTINUE} at {time}"));
                detail = None;
            } else {
                parts.push(time);
            }
        }
        if self.attempt > 0 {
            parts.push(format!("attempt {}", self.attempt));
        }
        if let Some(detail) = detail {
            parts.push(truncate(&single_line(detail), DETAIL_WIDTH));
        }
        parts.join(" · ")
    }

    /// Whether the chip changes as time passes.
    pub fn counts_down(&self) -> bool {
        self.deadline_epoch.is_some()
    }
}

/// A deadline as a person reads it: local `HH:MM` (with the date when it is not today)
/// and how long until then, `14:05 (in 3 h 12 min)`.
pub fn deadline_text<Tz: TimeZone>(epoch: i64, now_epoch: i64, zone: &Tz) -> String {
    let (Some(at), Some(now)) = (
        zone.timestamp_opt(epoch, 0).single(),
        zone.timestamp_opt(now_epoch, 0).single(),
    ) else {
        return format!("at {epoch} (unix)");
    };
    let (at, now) = (at.naive_local(), now.naive_local());
    let clock = if at.date() == now.date() {
        at.format("%H:%M").to_string()
    } else {
        at.format("%Y-%m-%d %H:%M").to_string()
    };
    let left = epoch - now_epoch;
    if left >= 0 {
        format!("{clock} (in {})", span(left.unsigned_abs()))
    } else {
        format!("{clock} ({} ago)", span(left.unsigned_abs()))
    }
}

/// `3 h 12 min`, `45 s`, `2 days 3 h`: the two largest units that are not zero.
pub fn span(secs: u64) -> String {
    let (days, hours, mins) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60);
    match (days, hours, mins) {
        (0, 0, 0) => format!("{secs} s"),
        (0, 0, m) => format!("{m} min"),
        (0, h, 0) => format!("{h} h"),
        (0, h, m) => format!("{h} h {m} min"),
        (1, 0, _) => "1 day".to_owned(),
        (d, 0, _) => format!("{d} days"),
        (1, h, _) => format!("1 day {h} h"),
        (d, h, _) => format!("{d} days {h} h"),
    }
}

/// One tab: `N:title` then `!` when the pane wants attention unseen, then the marker; the
/// title is cut so that the whole fits in `width` columns with the marker intact.
pub fn tab_label(
    number: usize,
    title: &str,
    unread: bool,
    marker: Option<&str>,
    width: usize,
) -> String {
    let prefix = format!("{number}:");
    let mut suffix = String::new();
    if unread {
        suffix.push('!');
    }
    if let Some(marker) = marker {
        suffix.push_str(marker);
    }
    let room = width.saturating_sub(prefix.width() + suffix.width());
    format!("{prefix}{}{suffix}", truncate(&single_line(title), room))
}

/// One tab as the tab row knows it: what [`tab_label`] needs besides its number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TabText<'a> {
    pub title: &'a str,
    pub unread: bool,
    pub marker: Option<String>,
}

/// What the tab row shows: the tabs in `shown` with their labels, and how many are hidden
/// before and after them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TabRow {
    pub shown: Range<usize>,
    /// The labels of the shown tabs, in order.
    pub labels: Vec<String>,
    pub hidden_before: usize,
    pub hidden_after: usize,
}

impl TabRow {
    /// What is drawn before the first shown tab: `<N │` when `N` tabs are hidden there.
    pub fn before_text(&self) -> String {
        hidden_before_text(self.hidden_before)
    }

    /// What is drawn after the last shown tab: ` N>` when `N` tabs are hidden there.
    pub fn after_text(&self) -> String {
        hidden_after_text(self.hidden_after)
    }

    /// The tab drawn at `column` (0-based) of the row: a shown tab, or the nearest hidden
    /// one for a click on a count of hidden tabs.
    pub fn tab_at(&self, column: usize) -> Option<usize> {
        let mut right = self.before_text().width();
        if column < right {
            return self.shown.start.checked_sub(1);
        }
        for (index, label) in self.shown.clone().zip(&self.labels) {
            right += tab_text(label).width();
            if column < right {
                return Some(index);
            }
        }
        (column < right + self.after_text().width()).then_some(self.shown.end)
    }

    /// The whole row as text, as [`draw`](crate::draw) lays it out.
    pub fn text(&self) -> String {
        let tabs: String = self.labels.iter().map(|label| tab_text(label)).collect();
        format!("{}{tabs}{}", self.before_text(), self.after_text())
    }
}

/// What follows each shown tab.
pub const TAB_SEPARATOR: &str = "│";

/// A shown tab's label with its padding, as it is highlighted.
pub fn padded_tab(label: &str) -> String {
    format!(" {label} ")
}

fn tab_text(label: &str) -> String {
    padded_tab(label) + TAB_SEPARATOR
}

fn hidden_before_text(count: usize) -> String {
    if count == 0 {
        String::new()
    } else {
        format!("<{count} │")
    }
}

fn hidden_after_text(count: usize) -> String {
    if count == 0 {
        String::new()
    } else {
        format!(" {count}>")
    }
}

/// The tabs that fit in `width` columns: all of them when they fit, else as many as fit
/// around the active one, which is always among them, the window as far left as it can be;
/// the hidden ones are counted at either end. When not even the active tab fits whole, its
/// title is cut (and without room for the counts, they go before its number does).
pub fn tab_row(tabs: &[TabText], active: usize, width: usize) -> TabRow {
    let label = |index: usize, width: usize| {
        let tab = &tabs[index];
        tab_label(
            index + 1,
            tab.title,
            tab.unread,
            tab.marker.as_deref(),
            width,
        )
    };
    if tabs.is_empty() {
        return TabRow {
            shown: 0..0,
            labels: Vec::new(),
            hidden_before: 0,
            hidden_after: 0,
        };
    }
    let active = active.min(tabs.len() - 1);
    let labels: Vec<String> = (0..tabs.len())
        .map(|index| label(index, TAB_WIDTH))
        .collect();
    let widths: Vec<usize> = labels.iter().map(|label| tab_text(label).width()).collect();
    let row_width = |shown: &Range<usize>| {
        widths[shown.clone()].iter().sum::<usize>()
            + hidden_before_text(shown.start).width()
            + hidden_after_text(tabs.len() - shown.end).width()
    };
    let best = (0..=active)
        .flat_map(|start| (active + 1..=tabs.len()).map(move |end| start..end))
        .filter(|shown| row_width(shown) <= width)
        .max_by_key(|shown| (shown.len(), std::cmp::Reverse(shown.start)));
    let shown = best.unwrap_or(active..active + 1);
    let (mut hidden_before, mut hidden_after) = (shown.start, tabs.len() - shown.end);
    let labels = if row_width(&shown) <= width {
        labels[shown.clone()].to_vec()
    } else {
        // Only the active tab, cut to what is left; the counts go first if even its number
        // would not fit beside them.
        let padding = tab_text("").width();
        let counts =
            hidden_before_text(hidden_before).width() + hidden_after_text(hidden_after).width();
        let number = format!("{}:", active + 1).width();
        if width < counts + padding + number {
            (hidden_before, hidden_after) = (0, 0);
        }
        let counts =
            hidden_before_text(hidden_before).width() + hidden_after_text(hidden_after).width();
        vec![label(active, width.saturating_sub(counts + padding))]
    };
    TabRow {
        shown,
        labels,
        hidden_before,
        hidden_after,
    }
}

/// `text` cut to at most `width` columns, with `…` standing for what was cut. Wide
/// characters are never split.
pub fn truncate(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > width - 1 {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// Control characters (a plugin's text could hold any) drawn as spaces, so one label is
/// one row.
fn single_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::FixedOffset;

    fn report(deadline: Option<i64>, attempt: u32, detail: Option<&str>) -> RecoveryReport {
        RecoveryReport {
            pane: 1,
            state: "waiting_for_reset".into(),
            detail: detail.map(str::to_owned),
            deadline_epoch: deadline,
            attempt,
        }
    }

    /// 2026-02-23 23:48:47 UTC.
    const NOW: i64 = 1_771_890_527;

    fn utc() -> FixedOffset {
        FixedOffset::east_opt(0).unwrap()
    }

    #[test]
    fn markers_are_drawn_in_the_zone_given_and_do_not_count_down() {
        let tokyo = FixedOffset::east_opt(9 * 3600).unwrap();
        let timed = Recovery::from_report(&report(Some(NOW), 0, None));
        assert_eq!(timed.marker(&utc()), "⏳23:48");
        assert_eq!(timed.marker(&tokyo), "⏳08:48");
        let untimed = Recovery::from_report(&report(None, 0, None));
        assert_eq!(untimed.marker(&utc()), "⏳");
        assert!(timed.counts_down() && !untimed.counts_down());
    }

    #[test]
    fn markers_and_chips() {
        #[track_caller]
        fn check(
            deadline: Option<i64>,
            attempt: u32,
            detail: Option<&str>,
            marker: &str,
            chip: &str,
        ) {
            let recovery = Recovery::from_report(&report(deadline, attempt, detail));
            let clock = Clock {
                now_epoch: NOW,
                zone: utc(),
            };
            assert_eq!(recovery.marker(&clock.zone), marker);
            assert_eq!(recovery.chip(&clock), chip);
        }
        let in_1h47 = NOW + 3600 + 47 * 60;
        check(
            Some(in_1h47),
            0,
            Some("usage limit"),
            "⏳01:35",
            "waiting_for_reset · 2026-02-24 01:35 (in 1 h 47 min) · usage limit",
        );
        check(
            Some(NOW + 600),
            0,
            Some("usage limit"),
            "⏳23:58",
            "waiting_for_reset · 23:58 (in 10 min) · usage limit",
        );
        // The last minute counts in seconds, then the chip says how long ago it was.
        check(
            Some(NOW + 59),
            0,
            None,
            "⏳23:49",
            "waiting_for_reset · 23:49 (in 59 s)",
        );
        check(
            Some(NOW),
            0,
            None,
            "⏳23:48",
            "waiting_for_reset · 23:48 (in 0 s)",
        );
        check(
            Some(NOW - 125),
            1,
            None,
            "⏳23:46⚠1",
            "waiting_for_reset · 23:46 (2 min ago) · attempt 1",
        );
        check(
            Some(NOW + 3 * 86_400 + 7200),
            0,
            None,
            "⏳01:48",
            "waiting_for_reset · 2026-02-27 01:48 (in 3 days 2 h)",
        );
        // Auto-continue is what the deadline brings: said once, with the time.
        check(
            Some(NOW + 600),
            0,
            Some("auto-continue"),
            "⏳23:58",
            "waiting_for_reset · auto-continue at 23:58 (in 10 min)",
        );
        check(
            Some(NOW + 30),
            2,
            Some("auto-continue"),
            "⏳23:49⚠2",
            "waiting_for_reset · auto-continue at 23:49 (in 30 s) · attempt 2",
        );
        // Only that exact detail: anything else is shown as it is.
        check(
            Some(NOW + 600),
            0,
            Some("auto-continue off"),
            "⏳23:58",
            "waiting_for_reset · 23:58 (in 10 min) · auto-continue off",
        );
        check(
            None,
            0,
            Some("auto-continue"),
            "⏳",
            "waiting_for_reset · auto-continue",
        );
        check(None, 0, None, "⏳", "waiting_for_reset");
        check(
            None,
            2,
            Some("backoff"),
            "⚠2",
            "waiting_for_reset · attempt 2 · backoff",
        );
        check(None, 0, Some("   "), "⏳", "waiting_for_reset");
        check(
            None,
            0,
            Some("two\nlines"),
            "⏳",
            "waiting_for_reset · two lines",
        );
        let long = "x".repeat(DETAIL_WIDTH + 10);
        let chip = Recovery {
            state: "backoff".into(),
            detail: Some(long),
            deadline_epoch: None,
            attempt: 0,
        }
        .chip(&Clock {
            now_epoch: NOW,
            zone: utc(),
        });
        assert_eq!(chip.width(), "backoff · ".width() + DETAIL_WIDTH, "{chip}");
        assert!(chip.ends_with('…'), "{chip}");
    }

    #[test]
    fn tab_labels_keep_the_marker_and_cut_the_title() {
        #[track_caller]
        fn check(title: &str, unread: bool, marker: Option<&str>, width: usize, expected: &str) {
            let label = tab_label(2, title, unread, marker, width);
            assert_eq!(label, expected);
            assert!(label.width() <= width, "{label} is {} wide", label.width());
        }
        check("codex", false, None, 28, "2:codex");
        check("codex", true, None, 28, "2:codex!");
        check("codex", false, Some("⏳14:05"), 28, "2:codex⏳14:05");
        // ⏳ is two columns wide: of 14 columns, `2:` and the marker leave 5 for the title.
        check(
            "a-very-long-session-title",
            false,
            Some("⏳14:05"),
            14,
            "2:a-ve…⏳14:05",
        );
        check(
            "a-very-long-session-title",
            true,
            Some("⚠2"),
            10,
            "2:a-ve…!⚠2",
        );
        // Wide characters are never split: 漢 is two columns.
        check("漢字漢字漢字", false, None, 9, "2:漢字漢…");
        check("漢字漢字漢字", false, None, 8, "2:漢字…");
        // No room for the title at all: the marker still shows.
        check("codex", false, Some("⏳14:05"), 9, "2:⏳14:05");
        check("tab\there", false, None, 28, "2:tab here");
    }

    fn shells(count: usize) -> Vec<TabText<'static>> {
        (0..count)
            .map(|_| TabText {
                title: "shell",
                unread: false,
                marker: None,
            })
            .collect()
    }

    #[test]
    fn tabs_that_fit_are_all_shown() {
        let row = tab_row(&shells(3), 1, 100);
        assert_eq!(row.text(), " 1:shell │ 2:shell │ 3:shell │");
        assert_eq!(
            (row.shown, row.hidden_before, row.hidden_after),
            (0..3, 0, 0)
        );
        // Exactly the width: still all of them.
        assert_eq!(
            tab_row(&shells(3), 0, 30).text(),
            " 1:shell │ 2:shell │ 3:shell │"
        );
        assert_eq!(tab_row(&[], 0, 80).text(), "");
    }

    #[test]
    fn more_tabs_than_columns_keep_the_active_one_and_count_the_hidden() {
        // 8 panes at 60 columns, the 8th in view (each tab is 10 columns).
        let row = tab_row(&shells(8), 7, 60);
        assert_eq!(
            row.text(),
            "<3 │ 4:shell │ 5:shell │ 6:shell │ 7:shell │ 8:shell │"
        );
        assert_eq!(row.shown, 3..8);
        let row = tab_row(&shells(8), 0, 60);
        assert_eq!(
            row.text(),
            " 1:shell │ 2:shell │ 3:shell │ 4:shell │ 5:shell │ 3>"
        );
        // In the middle: as far left as the active tab allows.
        assert_eq!(tab_row(&shells(8), 4, 60).shown, 0..5);
        assert_eq!(
            tab_row(&shells(8), 5, 40).text(),
            "<3 │ 4:shell │ 5:shell │ 6:shell │ 2>"
        );
        // Long titles and markers take their room; the active one still shows.
        let mut tabs = shells(8);
        tabs[6] = TabText {
            title: "codex: fixing the flaky tests",
            unread: true,
            marker: Some("⏳14:05".to_owned()),
        };
        assert_eq!(
            tab_row(&tabs, 6, 60).text(),
            "<4 │ 5:shell │ 6:shell │ 7:codex: fixing the…!⏳14:05 │ 1>"
        );
    }

    #[test]
    fn a_column_of_the_tab_row_names_the_tab_drawn_there() {
        // "<3 │ 4:shell │ 5:shell │ 6:shell │ 7:shell │ 8:shell │": the count is 4
        // columns, each tab 10.
        let row = tab_row(&shells(8), 7, 60);
        let at = |column| row.tab_at(column);
        assert_eq!(
            [at(0), at(3)],
            [Some(2), Some(2)],
            "the count: the tab before"
        );
        assert_eq!([at(4), at(13)], [Some(3), Some(3)]);
        assert_eq!([at(14), at(53)], [Some(4), Some(7)]);
        assert_eq!(at(54), None, "past the last tab");
        // " 1:shell │ … │ 5:shell │ 3>": the count after names the next hidden tab.
        let row = tab_row(&shells(8), 0, 60);
        assert_eq!([row.tab_at(0), row.tab_at(49)], [Some(0), Some(4)]);
        assert_eq!([row.tab_at(50), row.tab_at(52)], [Some(5), Some(5)]);
        assert_eq!(row.tab_at(53), None);
    }

    #[test]
    fn a_narrow_row_cuts_the_active_tab_but_keeps_its_number() {
        let mut tabs = shells(4);
        tabs[2].title = "a-very-long-session-title";
        let row = tab_row(&tabs, 2, 20);
        assert_eq!(row.text(), "<2 │ 3:a-very-… │ 1>");
        assert_eq!(row.text().width(), 20);
        // No room for the counts: the number comes first.
        assert_eq!(tab_row(&tabs, 2, 6).text(), " 3:… │");
        assert_eq!(tab_row(&tabs, 2, 4).labels, ["3:"]);
    }

    #[test]
    fn every_row_holds_the_active_tab_within_its_width() {
        for count in 1..=16 {
            let tabs = shells(count);
            for active in 0..count {
                for width in 7..=120 {
                    let row = tab_row(&tabs, active, width);
                    let text = row.text();
                    assert!(row.shown.contains(&active), "{count} {active} {width}");
                    assert!(text.contains(&format!(" {}:", active + 1)), "{text:?}");
                    assert!(text.width() <= width, "{text:?} in {width}");
                    // From 16 columns on, the counts always have room.
                    if width >= 16 {
                        assert_eq!(row.hidden_before, row.shown.start, "{text:?}");
                        assert_eq!(row.hidden_after, count - row.shown.end, "{text:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn deadlines_read_as_local_time_and_what_is_left() {
        let utc = FixedOffset::east_opt(0).unwrap();
        // 2026-02-23 23:48:47 UTC.
        let now = 1_771_890_527;
        assert_eq!(
            deadline_text(now + 3 * 3600 + 12 * 60, now, &utc),
            "2026-02-24 03:00 (in 3 h 12 min)"
        );
        assert_eq!(deadline_text(now + 45, now, &utc), "23:49 (in 45 s)");
        assert_eq!(deadline_text(now - 120, now, &utc), "23:46 (2 min ago)");
        let tokyo = FixedOffset::east_opt(9 * 3600).unwrap();
        assert_eq!(deadline_text(now + 60, now, &tokyo), "08:49 (in 1 min)");
        assert_eq!(span(9 * 86_400), "9 days");
        assert_eq!(span(86_400 + 7200 + 5), "1 day 2 h");
        assert_eq!(span(3600), "1 h");
    }

    #[test]
    fn truncation_counts_columns() {
        assert_eq!(truncate("hello", 5), "hello");
        assert_eq!(truncate("hello", 4), "hel…");
        assert_eq!(truncate("hello", 1), "…");
        assert_eq!(truncate("hello", 0), "");
        assert_eq!(
            truncate("e\u{301}tude", 5),
            "e\u{301}tude",
            "a combining mark takes no column"
        );
        assert_eq!(truncate("😀😀😀", 5), "😀😀…");
    }
}
