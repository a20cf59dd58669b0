//! What OpenCode says about its sessions, and what that means for the pane.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::provider::{Observation, Sink};

/// One session's state as the server reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Busy,
    /// Retrying by itself; `next_ms` is the epoch-ms time of the next attempt.
    Retry {
        next_ms: i64,
    },
    Idle,
    /// Missing from a `/session/status` snapshot: idle, or gone, and what happened between
    /// two polls is unknown.
    Absent,
    /// The session ended with an error (after its retries, when it was retrying).
    Error,
}

/// Most sessions remembered per pane.
const MAX_SESSIONS: usize = 32;

/// Session ids are `ses_` + 26 alphanumerics today; accept only a safe superset.
pub fn is_session_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// One SSE event's data: `session.status`, `session.idle` or `session.error` with a valid
/// `sessionID`; anything else is `None`.
pub fn parse_event(data: &str) -> Option<(String, Signal)> {
    let event: Value = serde_json::from_str(data).ok()?;
    let properties = event.get("properties")?;
    let session = properties.get("sessionID")?.as_str()?;
    if !is_session_id(session) {
        return None;
    }
    let signal = match event.get("type")?.as_str()? {
        "session.status" => status_signal(properties.get("status")?)?,
        "session.idle" => Signal::Idle,
        "session.error" => Signal::Error,
        _ => return None,
    };
    Some((session.to_owned(), signal))
}

/// The `/session/status` body: an object keyed by session id. Idle sessions are absent;
/// entries of unknown types and invalid ids are skipped.
pub fn parse_status_map(body: &[u8]) -> Result<Vec<(String, Signal)>, serde_json::Error> {
    let map: BTreeMap<String, Value> = serde_json::from_slice(body)?;
    Ok(map
        .into_iter()
        .filter(|(id, _)| is_session_id(id))
        .filter_map(|(id, status)| Some((id, status_signal(&status)?)))
        .collect())
}

fn status_signal(status: &Value) -> Option<Signal> {
    match status.get("type")?.as_str()? {
        "busy" => Some(Signal::Busy),
        "idle" => Some(Signal::Idle),
        "retry" => Some(Signal::Retry {
            next_ms: status.get("next")?.as_i64()?,
        }),
        _ => None,
    }
}

/// A retry episode of one session: from its first `retry` until it recovers or gives up.
#[derive(Debug, Default, Clone)]
struct Episode {
    next_ms: Option<i64>,
    busy_since_retry: bool,
}

/// Turns session signals into the pane's observations.
///
/// An episode ends as [`Observation::Recovered`] only when the session was seen `busy` after
/// its last `retry` and then idle without an error. `session.error`, or absence from the
/// status map without that busy sighting, is [`Observation::GaveUp`]; idle over the stream
/// without it is [`Observation::Stopped`] (an abort). The pane's session busy again outside
/// a retry is [`Observation::Continued`]. With the event
/// stream every transition is seen; with polling only, a recovered turn shorter than the poll
/// interval is indistinguishable from a give-up and is reported as one (docs/recovery.md).
#[derive(Debug, Default)]
pub struct Tracker {
    /// Sessions seen, with their open episode if any; bounded by [`MAX_SESSIONS`].
    sessions: BTreeMap<String, Option<Episode>>,
    /// The session whose episode the pane is in (the one to resume).
    pane_session: Option<String>,
    /// Two sessions retried at once: which one is the pane's is unknown until a single
    /// session starts a new episode.
    ambiguous: bool,
}

impl Tracker {
    /// The session to reopen; `None` while that is unknown or ambiguous.
    pub fn pane_session(&self) -> Option<&str> {
        self.pane_session.as_deref().filter(|_| !self.ambiguous)
    }

    /// Whether some session is in a retry episode.
    pub fn in_episode(&self) -> bool {
        self.sessions.values().any(Option::is_some)
    }

    /// The server is gone (the process exited or was relaunched): its retries ended with
    /// it, unreported. The pane's session stays known for the relaunch.
    pub fn settle(&mut self) {
        self.sessions
            .values_mut()
            .for_each(|episode| *episode = None);
    }

    pub fn on_signal(&mut self, session: &str, signal: Signal, sink: &mut Sink) {
        if !self.sessions.contains_key(session) {
            if self.sessions.len() >= MAX_SESSIONS && !self.forget_one_quiet_session() {
                // Every remembered session is retrying: a newcomer cannot be the pane's
                // session without ambiguity anyway.
                sink.observe(Observation::Ambiguous);
                self.ambiguous = true;
                return;
            }
            self.sessions.insert(session.to_owned(), None);
        }
        let others_in_episode = self
            .sessions
            .iter()
            .any(|(id, episode)| id != session && episode.is_some());
        let entry = self.sessions.get_mut(session).expect("inserted above");
        match (signal, entry.as_mut()) {
            (Signal::Retry { next_ms }, episode) => {
                if episode.is_none() {
                    // Two sessions of this pane's server retrying at once: which one is the
                    // pane's? Never guess.
                    self.ambiguous = others_in_episode;
                    if others_in_episode {
                        sink.observe(Observation::Ambiguous);
                    }
                }
                let episode = entry.get_or_insert_with(Episode::default);
                episode.busy_since_retry = false;
                if episode.next_ms != Some(next_ms) {
                    episode.next_ms = Some(next_ms);
                    sink.observe(Observation::ProviderRetrying {
                        until_epoch: Some(next_ms.div_euclid(1000)),
                    });
                }
                self.pane_session = Some(session.to_owned());
            }
            (Signal::Busy, Some(episode)) => episode.busy_since_retry = true,
            (Signal::Busy, None) if self.pane_session.as_deref() == Some(session) => {
                sink.observe(Observation::Continued);
            }
            (Signal::Error, Some(_)) => {
                *entry = None;
                sink.observe(Observation::GaveUp);
            }
            (Signal::Idle | Signal::Absent, Some(episode)) => {
                let recovered = episode.busy_since_retry;
                *entry = None;
                sink.observe(match signal {
                    _ if recovered => Observation::Recovered,
                    // The stream shows every transition: idle without an error is an abort.
                    Signal::Idle => Observation::Stopped,
                    // A poll may have missed the error, or a short recovery (docs/recovery.md).
                    _ => Observation::GaveUp,
                });
            }
            (Signal::Busy | Signal::Error | Signal::Idle | Signal::Absent, None) => {}
        }
    }

    /// A full `/session/status` snapshot: sessions it does not list are idle.
    pub fn on_snapshot(&mut self, entries: &[(String, Signal)], sink: &mut Sink) {
        let absent: Vec<String> = self
            .sessions
            .iter()
            .filter(|(id, episode)| episode.is_some() && !entries.iter().any(|(e, _)| e == *id))
            .map(|(id, _)| id.clone())
            .collect();
        for (session, signal) in entries {
            self.on_signal(session, *signal, sink);
        }
        for session in absent {
            self.on_signal(&session, Signal::Absent, sink);
        }
    }

    /// Forgets a session without an episode that is not the pane's; false if there is none.
    fn forget_one_quiet_session(&mut self) -> bool {
        let quiet = self
            .sessions
            .iter()
            .find(|(id, episode)| episode.is_none() && self.pane_session.as_ref() != Some(id))
            .map(|(id, _)| id.clone());
        quiet.is_some_and(|id| self.sessions.remove(&id).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::opencode::{FIXTURES, captured_sse};

    fn describe(observations: Vec<Observation>) -> Vec<String> {
        observations
            .into_iter()
            .map(|observation| match observation {
                Observation::ProviderRetrying {
                    until_epoch: Some(until),
                } => format!("retry {until}"),
                other => format!("{other:?}"),
            })
            .collect()
    }

    fn observe_sse(scenario: &str) -> Vec<String> {
        let mut parser = crate::opencode::sse::SseParser::default();
        let mut tracker = Tracker::default();
        let mut sink = Sink::default();
        for data in parser.feed(&captured_sse(scenario)) {
            if let Some((session, signal)) = parse_event(&data) {
                tracker.on_signal(&session, signal, &mut sink);
            }
        }
        describe(sink.observations)
    }

    /// The captured polls (every 0.5 s, scoped with `?directory=`), taking every `every`-th
    /// one starting at `phase`, then one after the capture's end.
    fn observe_polls(scenario: &str, every: usize, phase: usize) -> Vec<String> {
        let text =
            std::fs::read_to_string(format!("{FIXTURES}/{scenario}/polls.jsonl")).expect("fixture");
        let mut tracker = Tracker::default();
        let mut sink = Sink::default();
        let lines: Vec<&str> = text.lines().collect();
        // Every capture ends once the session is idle, and it stays so: one more poll after
        // the capture's end sees its last body again.
        let last = lines.last().copied();
        for line in lines.iter().skip(phase).step_by(every).copied().chain(last) {
            let poll: Value = serde_json::from_str(line).expect("fixture JSON");
            let body = poll["status_directory"].as_str().expect("a body");
            let entries = parse_status_map(body.as_bytes()).expect("a status map");
            tracker.on_snapshot(&entries, &mut sink);
        }
        describe(sink.observations)
    }

    #[track_caller]
    fn check(scenario: &str, sse: &[&str], polled_every_half_second: &[&str], last_at_5_s: &str) {
        assert_eq!(observe_sse(scenario), sse, "{scenario} over SSE");
        assert_eq!(
            observe_polls(scenario, 1, 0),
            polled_every_half_second,
            "{scenario} polled every 0.5 s"
        );
        // The adapter's real cadence: every 5 s, whatever the phase against OpenCode's timers.
        for phase in 0..10 {
            let polled = observe_polls(scenario, 10, phase);
            assert_eq!(
                polled.last().map_or("nothing", String::as_str),
                last_at_5_s,
                "{scenario} polled every 5 s from poll {phase}: {polled:?}"
            );
        }
    }

    #[test]
    fn every_captured_scenario_over_the_stream_and_by_polling() {
        check("a-normal", &[], &[], "nothing");
        // Gave up after 5 retries: `session.error`, then the session left the map.
        let b2_retries = [
            "retry 1796228361",
            "retry 1796228364",
            "retry 1796228367",
            "retry 1796228370",
            "retry 1796228373",
        ];
        let b2: Vec<&str> = b2_retries.iter().copied().chain(["GaveUp"]).collect();
        check("b2-429-retry-after-ms-3000", &b2, &b2, "GaveUp");
        // Aborted while waiting for its retry (the captures' `abort.http.txt`): the stream
        // sees it go idle without an error; a poll sees it leave the map without recovering,
        // which is what a give-up looks like too.
        let b = ["retry 1796228331", "retry 1796228351", "retry 1796228371"];
        let stopped = |retries: &[&'static str]| [retries, &["Stopped"]].concat();
        let gave_up = |retries: &[&'static str]| [retries, &["GaveUp"]].concat();
        check("b-429-retry-after-20", &stopped(&b), &gave_up(&b), "GaveUp");
        let b3 = [
            "retry 1796228381",
            "retry 1796228386",
            "retry 1796228395",
            "retry 1796228414",
        ];
        check(
            "b3-429-no-retry-headers",
            &stopped(&b3),
            &gave_up(&b3),
            "GaveUp",
        );
        // Recovered by itself: the stream sees busy after the retry, then idle. The polls
        // never see that 0.35 s busy, so polling reports a give-up (the conservative reading,
        // docs/recovery.md).
        check(
            "c-first2-429-then-ok",
            &["retry 1796228421", "Recovered"],
            &["retry 1796228421", "GaveUp"],
            "GaveUp",
        );
        // The same with the session in another directory than the server's, seen through
        // `?directory=` (the plain map never shows it).
        check(
            "d-session-in-other-directory",
            &["retry 1796228433", "Recovered"],
            &["retry 1796228433", "GaveUp"],
            "GaveUp",
        );
    }

    #[test]
    fn a_short_busy_between_attempts_then_a_give_up_is_a_give_up_over_the_stream() {
        // b2's end as the stream shows it: busy for 19 ms (the 6th attempt), then the error.
        let mut tracker = Tracker::default();
        let mut sink = Sink::default();
        tracker.on_signal("ses_a", Signal::Retry { next_ms: 5_000 }, &mut sink);
        tracker.on_signal("ses_a", Signal::Busy, &mut sink);
        tracker.on_signal("ses_a", Signal::Error, &mut sink);
        tracker.on_signal("ses_a", Signal::Idle, &mut sink);
        assert_eq!(describe(sink.observations), ["retry 5", "GaveUp"]);
        assert_eq!(tracker.pane_session(), Some("ses_a"));
        assert!(!tracker.in_episode());
    }

    #[test]
    fn status_maps_skip_unknown_types_and_bad_ids() {
        let body = br#"{"ses_a":{"type":"busy"},"ses_b":{"type":"retry","attempt":2,"message":"m","next":1500},"ses c":{"type":"busy"},"ses_d":{"type":"compacting"}}"#;
        assert_eq!(
            parse_status_map(body).unwrap(),
            [
                ("ses_a".to_owned(), Signal::Busy),
                ("ses_b".to_owned(), Signal::Retry { next_ms: 1500 })
            ]
        );
        assert_eq!(parse_status_map(b"{}").unwrap(), []);
        assert!(parse_status_map(b"[]").is_err());
        assert!(!is_session_id(&"a".repeat(65)) && is_session_id(&"a".repeat(64)));
        assert!(!is_session_id("") && !is_session_id("ses_a/../b"));
    }

    #[test]
    fn two_sessions_retrying_at_once_are_ambiguous_until_one_retries_alone() {
        let mut tracker = Tracker::default();
        let mut sink = Sink::default();
        tracker.on_signal("ses_a", Signal::Retry { next_ms: 5_000 }, &mut sink);
        tracker.on_signal("ses_b", Signal::Retry { next_ms: 6_000 }, &mut sink);
        assert!(sink.observations.contains(&Observation::Ambiguous));
        assert_eq!(tracker.pane_session(), None, "never guess");
        tracker.on_signal("ses_a", Signal::Error, &mut sink);
        tracker.on_signal("ses_b", Signal::Error, &mut sink);
        tracker.on_signal("ses_b", Signal::Retry { next_ms: 9_000 }, &mut sink);
        assert_eq!(tracker.pane_session(), Some("ses_b"));
    }

    #[test]
    fn settling_ends_episodes_silently_and_keeps_the_session() {
        let mut tracker = Tracker::default();
        let mut sink = Sink::default();
        tracker.on_signal("ses_a", Signal::Retry { next_ms: 5_000 }, &mut sink);
        tracker.settle();
        assert!(!tracker.in_episode());
        tracker.on_snapshot(&[], &mut sink);
        assert_eq!(describe(sink.observations), ["retry 5"]);
        assert_eq!(tracker.pane_session(), Some("ses_a"));
    }

    #[test]
    fn sessions_remembered_are_bounded() {
        let mut tracker = Tracker::default();
        let mut sink = Sink::default();
        tracker.on_signal("ses_pane", Signal::Retry { next_ms: 1 }, &mut sink);
        for n in 0..(MAX_SESSIONS * 3) {
            tracker.on_signal(&format!("ses_{n}"), Signal::Busy, &mut sink);
        }
        assert!(tracker.sessions.len() <= MAX_SESSIONS);
        assert_eq!(tracker.pane_session(), Some("ses_pane"));
    }
}
