//! What is worth telling a person who is away (a desktop notification, a phone): the
//! moments a plugin calls them back or recovery carries on without them. One reading of the
//! hub's messages, shared by every client that notifies (the terminal client, the daemon's
//! `[[notify]]` hooks); the web page mirrors it in `notice.js`.
//!
//! The plugin's `status` is display-only text (SPEC §2.4), so the moments are read from the
//! labels the bundled plugin sends (SPEC §9.1): a pane entering `needs_attention`, `idle`
//! with detail `resumed` or `auto-continued`, and every `attention`.

use std::collections::{HashMap, HashSet};

use crate::hub::{HubMessage, RecoveryReport, RecoveryState};

/// The kinds of moment, named as the `[[notify]]` hooks receive them in `NIGHTCROW_EVENT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoticeEvent {
    /// The plugin wants the person back (`attention`).
    Attention,
    /// Recovery cannot go on without the person (`needs_attention`).
    NeedsAttention,
    /// The session was continued at the reset without the person (`idle` · `auto-continued`).
    AutoContinued,
    /// An exited session was relaunched and confirmed (`idle` · `resumed`).
    Resumed,
}

impl NoticeEvent {
    pub const ALL: [NoticeEvent; 4] = [
        NoticeEvent::Attention,
        NoticeEvent::NeedsAttention,
        NoticeEvent::AutoContinued,
        NoticeEvent::Resumed,
    ];

    /// The event's name on the wire and in hook environments.
    pub fn name(self) -> &'static str {
        match self {
            NoticeEvent::Attention => "attention",
            NoticeEvent::NeedsAttention => "needs_attention",
            NoticeEvent::AutoContinued => "auto_continued",
            NoticeEvent::Resumed => "resumed",
        }
    }

    pub fn from_name(name: &str) -> Option<NoticeEvent> {
        NoticeEvent::ALL
            .into_iter()
            .find(|event| event.name() == name)
    }

    /// The event a report announces when a pane enters it; `None` for the rest.
    fn of_report(report: &RecoveryReport) -> Option<NoticeEvent> {
        match (&report.state, report.detail.as_deref()) {
            (RecoveryState::Label(label), _) if label == "needs_attention" => {
                Some(NoticeEvent::NeedsAttention)
            }
            (RecoveryState::Idle, Some("auto-continued")) => Some(NoticeEvent::AutoContinued),
            (RecoveryState::Idle, Some("resumed")) => Some(NoticeEvent::Resumed),
            _ => None,
        }
    }
}

/// One moment to tell a person about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub pane: u64,
    pub event: NoticeEvent,
    /// The pane's latest report when the notice was raised (for an `attention`, the report
    /// that came before it, if any).
    pub report: Option<RecoveryReport>,
}

impl Notice {
    /// One line a person reads on a lock screen: what happened, then the plugin's detail.
    pub fn text(&self) -> String {
        let what = match self.event {
            NoticeEvent::Attention => "wants you back",
            NoticeEvent::NeedsAttention => "needs you",
            NoticeEvent::AutoContinued => "carried on after the usage limit (auto-continue)",
            NoticeEvent::Resumed => "resumed after the usage limit",
        };
        let detail = self
            .report
            .as_ref()
            .and_then(|report| report.detail.as_deref())
            .filter(|detail| !detail.trim().is_empty())
            .filter(|_| {
                matches!(
                    self.event,
                    NoticeEvent::Attention | NoticeEvent::NeedsAttention
                )
            });
        match detail {
            Some(detail) => format!("pane {} {what}: {detail}", self.pane),
            None => format!("pane {} {what}", self.pane),
        }
    }
}

/// Reads one attachment's messages and says which are news worth a notice: each event once
/// when a pane enters it (a repeated report is not news), nothing from the replay before
/// `live`, and an `attention` that follows the `needs_attention` it belongs to folded into
/// that one notice (the bundled plugin sends both for one call-back).
#[derive(Debug, Default)]
pub struct Notices {
    live: bool,
    reports: HashMap<u64, RecoveryReport>,
    announced_needs_attention: HashSet<u64>,
}

impl Notices {
    pub fn new() -> Notices {
        Notices::default()
    }

    pub fn observe(&mut self, message: &HubMessage) -> Option<Notice> {
        match message {
            HubMessage::Hello { .. } => {
                *self = Notices::new();
                None
            }
            HubMessage::Live => {
                self.live = true;
                None
            }
            HubMessage::Recovery(report) => {
                let entered = NoticeEvent::of_report(report).filter(|event| {
                    self.reports
                        .get(&report.pane)
                        .and_then(NoticeEvent::of_report)
                        != Some(*event)
                });
                self.reports.insert(report.pane, report.clone());
                self.announced_needs_attention.remove(&report.pane);
                let event = entered.filter(|_| self.live)?;
                if event == NoticeEvent::NeedsAttention {
                    self.announced_needs_attention.insert(report.pane);
                }
                Some(Notice {
                    pane: report.pane,
                    event,
                    report: Some(report.clone()),
                })
            }
            HubMessage::Attention { pane } => {
                if self.announced_needs_attention.remove(pane) || !self.live {
                    return None;
                }
                Some(Notice {
                    pane: *pane,
                    event: NoticeEvent::Attention,
                    report: self.reports.get(pane).cloned(),
                })
            }
            HubMessage::Closed { pane } => {
                self.reports.remove(pane);
                self.announced_needs_attention.remove(pane);
                None
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(pane: u64, state: &str, detail: Option<&str>) -> HubMessage {
        HubMessage::Recovery(RecoveryReport {
            pane,
            state: state.into(),
            detail: detail.map(str::to_owned),
            deadline_epoch: None,
            attempt: 0,
        })
    }

    fn events(notices: &mut Notices, messages: &[HubMessage]) -> Vec<(u64, &'static str)> {
        messages
            .iter()
            .filter_map(|message| notices.observe(message))
            .map(|notice| (notice.pane, notice.event.name()))
            .collect()
    }

    #[test]
    fn the_replay_is_a_baseline_and_news_is_told_once() {
        let mut notices = Notices::new();
        let replay = [
            HubMessage::Hello { version: 1 },
            report(
                1,
                "needs_attention",
                Some("limit reset; continue the session"),
            ),
            report(2, "waiting_for_reset", Some("usage limit")),
        ];
        assert!(events(&mut notices, &replay).is_empty());
        notices.observe(&HubMessage::Live);
        let news = [
            report(
                1,
                "needs_attention",
                Some("limit reset; continue the session"),
            ),
            report(
                2,
                "needs_attention",
                Some("limit reset; continue the session"),
            ),
            HubMessage::Attention { pane: 2 },
            report(
                2,
                "needs_attention",
                Some("limit reset; continue the session"),
            ),
            HubMessage::Attention { pane: 2 },
            report(3, "resuming", Some("resuming session")),
            report(3, "idle", Some("resumed")),
            report(4, "idle", Some("auto-continued")),
            report(5, "idle", Some("continued")),
            report(5, "idle", Some("cancelled")),
            HubMessage::Attention { pane: 5 },
        ];
        assert_eq!(
            events(&mut notices, &news),
            [
                (2, "needs_attention"),
                (2, "attention"),
                (3, "resumed"),
                (4, "auto_continued"),
                (5, "attention"),
            ]
        );
    }

    #[test]
    fn a_pane_that_leaves_and_reenters_a_state_is_told_again() {
        let mut notices = Notices::new();
        notices.observe(&HubMessage::Live);
        let messages = [
            report(1, "needs_attention", None),
            report(1, "waiting_for_reset", Some("usage limit")),
            report(1, "needs_attention", None),
            HubMessage::Closed { pane: 1 },
            report(1, "needs_attention", None),
        ];
        assert_eq!(
            events(&mut notices, &messages),
            [
                (1, "needs_attention"),
                (1, "needs_attention"),
                (1, "needs_attention")
            ]
        );
    }

    #[test]
    fn texts_name_the_pane_and_the_reason() {
        let mut notices = Notices::new();
        notices.observe(&HubMessage::Live);
        let told = notices
            .observe(&report(7, "needs_attention", Some("auto-continue used up")))
            .expect("news");
        assert_eq!(told.text(), "pane 7 needs you: auto-continue used up");
        let told = notices
            .observe(&report(7, "idle", Some("auto-continued")))
            .expect("news");
        assert_eq!(
            told.text(),
            "pane 7 carried on after the usage limit (auto-continue)"
        );
        for event in NoticeEvent::ALL {
            assert_eq!(NoticeEvent::from_name(event.name()), Some(event));
        }
    }
}
