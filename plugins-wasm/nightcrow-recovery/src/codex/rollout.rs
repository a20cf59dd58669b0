//! The Codex rollout grammar (SPEC §9.2): what one JSONL record means for limit detection.
//!
//! Only structured fields are read: envelope `type`, `event_msg` payload `type`,
//! `rate_limits` numbers, `task_complete.error.codex_error_info` and whether
//! `last_agent_message` is null. Message text is never looked at (the human-readable
//! "try again at …" is not parsed, and nothing from a record is ever logged or reported).

use serde::Deserialize;
use serde_json::Value;

/// What the start of a rollout says about its session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionMeta {
    /// Thread uuid (resume id).
    pub id: String,
    pub cwd: String,
    /// Creation time, unix milliseconds.
    pub created_ms: i64,
    /// A subagent thread, never a pane's own session.
    pub subagent: bool,
}

/// A turn's start, or what its end means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnEvent {
    /// A turn began (`task_started`).
    Started,
    /// The turn stopped at a usage limit; reset time of the exhausted window if known.
    Limit { reset_epoch: Option<i64> },
    /// A normal turn (an agent message came back).
    Normal,
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    kind: String,
    timestamp: Option<String>,
    #[serde(default)]
    payload: Value,
}

/// Why a record was skipped: for counts in logs only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadRecord {
    NotJson,
    BadSessionMeta,
}

/// Parses the first record of a rollout.
pub fn session_meta(line: &str) -> Result<SessionMeta, BadRecord> {
    let envelope: Envelope = serde_json::from_str(line).map_err(|_| BadRecord::NotJson)?;
    if envelope.kind != "session_meta" {
        return Err(BadRecord::BadSessionMeta);
    }
    let payload = &envelope.payload;
    let id = payload["id"].as_str().filter(|id| is_uuid(id));
    let cwd = payload["cwd"].as_str();
    let created_ms = payload["timestamp"]
        .as_str()
        .or(envelope.timestamp.as_deref())
        .and_then(parse_rfc3339_ms);
    let (Some(id), Some(cwd), Some(created_ms)) = (id, cwd, created_ms) else {
        return Err(BadRecord::BadSessionMeta);
    };
    let subagent = payload["source"].get("subagent").is_some()
        || payload["thread_source"].as_str() == Some("subagent");
    Ok(SessionMeta {
        id: id.to_owned(),
        cwd: cwd.to_owned(),
        created_ms,
        subagent,
    })
}

/// Rate-limit state seen in the current turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Limits {
    exhausted: bool,
    reset_epoch: Option<i64>,
}

/// Follows the turns of one rollout, one record at a time.
#[derive(Debug, Default)]
pub struct Turns {
    limits: Option<Limits>,
}

impl Turns {
    /// Feeds one record; a turn end comes out. Unknown envelope and payload types are
    /// skipped, as newer Codex versions add them freely.
    pub fn record(&mut self, line: &str) -> Result<Option<TurnEvent>, BadRecord> {
        let envelope: Envelope = serde_json::from_str(line).map_err(|_| BadRecord::NotJson)?;
        if envelope.kind != "event_msg" {
            return Ok(None);
        }
        let payload = &envelope.payload;
        match payload["type"].as_str() {
            Some("task_started" | "turn_started") => {
                self.limits = None;
                return Ok(Some(TurnEvent::Started));
            }
            Some("token_count") => self.limits = Some(limits(&payload["rate_limits"])),
            Some("task_complete" | "turn_complete") => {
                let limits = self.limits.take();
                let error_says_limit =
                    payload["error"]["codex_error_info"].as_str() == Some("usage_limit_exceeded");
                let no_answer = payload["last_agent_message"].is_null();
                let reset_epoch = limits.and_then(|limits| limits.reset_epoch);
                if error_says_limit || (no_answer && limits.is_some_and(|l| l.exhausted)) {
                    return Ok(Some(TurnEvent::Limit { reset_epoch }));
                }
                if !no_answer {
                    return Ok(Some(TurnEvent::Normal));
                }
            }
            _ => {}
        }
        Ok(None)
    }
}

/// A window is exhausted at `used_percent >= 100`; the reset is the latest `resets_at` of
/// the exhausted windows. `rate_limit_reached_type` marks the turn exhausted but adds no
/// reset time of its own (no window at 100 % ⇒ unknown ⇒ backoff).
fn limits(rate_limits: &Value) -> Limits {
    let windows = ["primary", "secondary", "individual_limit"].map(|key| &rate_limits[key]);
    let exhausted_resets: Vec<Option<i64>> = windows
        .iter()
        .filter(|window| {
            window["used_percent"]
                .as_f64()
                .is_some_and(|used| used >= 100.0)
        })
        .map(|window| window["resets_at"].as_i64())
        .collect();
    let reached_type = !rate_limits["rate_limit_reached_type"].is_null();
    Limits {
        exhausted: reached_type || !exhausted_resets.is_empty(),
        reset_epoch: exhausted_resets.into_iter().flatten().max(),
    }
}

/// `8-4-4-4-12` hex with hyphens: the only shape accepted as a resume id.
pub fn is_uuid(text: &str) -> bool {
    text.len() == 36
        && text.char_indices().all(|(at, c)| match at {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` to unix milliseconds.
pub fn parse_rfc3339_ms(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let number = |from: usize, len: usize| -> Option<i64> {
        let digits = text.get(from..from + len)?;
        digits
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| digits.parse().ok())?
    };
    if bytes.len() < 20
        || bytes[4] != b'-'
        || bytes[7] != b'-'
        || !matches!(bytes[10], b'T' | b't' | b' ')
        || bytes[13] != b':'
        || bytes[16] != b':'
    {
        return None;
    }
    let (year, month, day) = (number(0, 4)?, number(5, 2)?, number(8, 2)?);
    let (hour, minute, second) = (number(11, 2)?, number(14, 2)?, number(17, 2)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    let mut millis = 0;
    if let Some(fraction) = rest.strip_prefix('.') {
        let len = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if len == 0 {
            return None;
        }
        let padded = format!("{:0<3}", &fraction[..len.min(3)]);
        millis = padded.parse::<i64>().ok()?;
        rest = &fraction[len..];
    }
    let offset_minutes = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && rest.as_bytes()[3] == b':' => {
            let sign = match rest.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let hours: i64 = rest[1..3].parse().ok()?;
            let minutes: i64 = rest[4..6].parse().ok()?;
            sign * (hours * 60 + minutes)
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds * 1000 + millis)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date `(year, month, day)` of a day count since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_to_unix_milliseconds() {
        for (text, expected) in [
            ("1970-01-01T00:00:00Z", Some(0)),
            ("2026-12-02T16:10:09.546Z", Some(1_796_227_809_546)),
            ("2026-12-02T16:10:09.5Z", Some(1_796_227_809_500)),
            ("2026-12-02T16:10:09.123456789Z", Some(1_796_227_809_123)),
            ("2026-12-02T17:10:09+01:00", Some(1_796_227_809_000)),
            ("2026-12-02T15:40:09-00:30", Some(1_796_227_809_000)),
            ("2026-02-29T00:00:00Z", Some(1_772_323_200_000)),
            ("2026-12-02T16:10:09", None),
            ("2026-13-02T16:10:09Z", None),
            ("2026-12-02T16:10:09.Z", None),
            ("2026-12-02T16:10:09+0100", None),
            ("not a time at all!!", None),
            ("", None),
        ] {
            assert_eq!(parse_rfc3339_ms(text), expected, "{text}");
        }
    }

    #[test]
    fn civil_dates_round_trip() {
        for days in [-800_000, -1, 0, 1, 20_454, 20_789, 20_790, 2_000_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(civil_from_days(20_789), (2026, 12, 2));
    }

    #[test]
    fn uuids_have_one_shape() {
        assert!(is_uuid("01a23785-4104-78f1-b4f0-247bed73e273"));
        for bad in [
            "",
            "01a23785-4104-78f1-b4f0-247bed73e27",
            "01a23785-4104-78f1-b4f0-247bed73e2733",
            "01a23785_4104-78f1-b4f0-247bed73e273",
            "01a23785-4104-78f1-b4f0-247bed73e27g",
            "01a23785-4104-78f1-b4f0-247bed73e27 ",
        ] {
            assert!(!is_uuid(bad), "{bad:?}");
        }
    }

    #[track_caller]
    fn check(records: &[&str], expected: &[TurnEvent]) {
        let mut turns = Turns::default();
        let ends: Vec<TurnEvent> = records
            .iter()
            .filter_map(|line| turns.record(line).expect("valid record"))
            .filter(|event| *event != TurnEvent::Started)
            .collect();
        assert_eq!(ends, expected);
    }

    const STARTED: &str =
        r#"{"timestamp":"t","type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}"#;

    fn token_count(rate_limits: &str) -> String {
        format!(
            r#"{{"timestamp":"t","type":"event_msg","payload":{{"type":"token_count","info":{{}},"rate_limits":{rate_limits}}}}}"#
        )
    }

    fn complete(last_agent_message: &str, error: &str) -> String {
        format!(
            r#"{{"timestamp":"t","type":"event_msg","payload":{{"type":"task_complete","turn_id":"t1","last_agent_message":{last_agent_message}{error}}}}}"#
        )
    }

    #[test]
    fn limit_detection_both_forms_and_what_is_not_a_limit() {
        let limit_error = r#","error":{"message":"You've hit your usage limit. try again at Aug 8th, 2026 1:59 PM.","codex_error_info":"usage_limit_exceeded"}"#;
        let full_primary = r#"{"primary":{"used_percent":100.0,"window_minutes":10080,"resets_at":1786165193},"secondary":null,"rate_limit_reached_type":null}"#;
        let full_both = r#"{"primary":{"used_percent":100,"window_minutes":300,"resets_at":1786000000},"secondary":{"used_percent":101.5,"window_minutes":10080,"resets_at":1786165193},"rate_limit_reached_type":null}"#;
        let full_secondary = r#"{"primary":{"used_percent":20,"window_minutes":300,"resets_at":1786000000},"secondary":{"used_percent":100,"window_minutes":10080,"resets_at":1786165193}}"#;
        let reached_only = r#"{"primary":{"used_percent":55,"window_minutes":300,"resets_at":1786000000},"secondary":null,"rate_limit_reached_type":"rate_limit_reached"}"#;
        let fine = r#"{"primary":{"used_percent":40,"window_minutes":300,"resets_at":1786000000},"secondary":null,"rate_limit_reached_type":null}"#;
        let limit = |reset| TurnEvent::Limit { reset_epoch: reset };
        // (a) newer Codex: the error says so; the reset comes from the exhausted window.
        check(
            &[
                STARTED,
                &token_count(full_primary),
                &complete("null", limit_error),
            ],
            &[limit(Some(1786165193))],
        );
        // (a) without any rate limits known: no reset.
        check(
            &[
                STARTED,
                &token_count(r#"{"primary":null,"secondary":null}"#),
                &complete("null", limit_error),
            ],
            &[limit(None)],
        );
        check(&[STARTED, &complete("null", limit_error)], &[limit(None)]);
        // (b) older Codex: a window at 100 % and then no agent message.
        check(
            &[STARTED, &token_count(full_primary), &complete("null", "")],
            &[limit(Some(1786165193))],
        );
        check(
            &[STARTED, &token_count(full_both), &complete("null", "")],
            &[limit(Some(1786165193))],
        );
        check(
            &[STARTED, &token_count(full_secondary), &complete("null", "")],
            &[limit(Some(1786165193))],
        );
        check(
            &[STARTED, &token_count(reached_only), &complete("null", "")],
            &[limit(None)],
        );
        // turn_complete is an alias of task_complete; a missing field counts as null.
        check(
            &[
                STARTED,
                &token_count(full_primary),
                r#"{"type":"event_msg","payload":{"type":"turn_complete"}}"#,
            ],
            &[limit(Some(1786165193))],
        );
        // Not limits: an answer came back; a window not full; another error kind.
        check(
            &[
                STARTED,
                &token_count(full_primary),
                &complete(r#""done""#, ""),
            ],
            &[TurnEvent::Normal],
        );
        check(&[STARTED, &token_count(fine), &complete("null", "")], &[]);
        let other_error = r#","error":{"message":"x","codex_error_info":{"response_too_many_failed_attempts":{"http_status_code":429}}}"#;
        check(
            &[STARTED, &token_count(fine), &complete("null", other_error)],
            &[],
        );
        // A full window from an earlier turn does not carry over a task_started.
        check(
            &[&token_count(full_primary), STARTED, &complete("null", "")],
            &[],
        );
        // Unknown envelope and payload types are skipped.
        check(
            &[
                r#"{"timestamp":"t","ordinal":3,"type":"world_state","payload":{"x":1}}"#,
                r#"{"timestamp":"t","type":"event_msg","payload":{"type":"thread_settings_applied"}}"#,
                r#"{"type":"response_item","payload":{"type":"message","content":[]}}"#,
                STARTED,
                &complete(r#""ok""#, ""),
            ],
            &[TurnEvent::Normal],
        );
    }

    #[test]
    fn a_turn_start_is_told_before_its_end() {
        let mut turns = Turns::default();
        let events: Vec<TurnEvent> = [STARTED, &complete(r#""done""#, "")]
            .iter()
            .filter_map(|line| turns.record(line).expect("valid record"))
            .collect();
        assert_eq!(events, [TurnEvent::Started, TurnEvent::Normal]);
        let alias = STARTED.replace("task_started", "turn_started");
        assert_eq!(turns.record(&alias), Ok(Some(TurnEvent::Started)));
    }

    #[test]
    fn bad_records_are_reported_not_fatal() {
        let mut turns = Turns::default();
        assert_eq!(turns.record("{not json"), Err(BadRecord::NotJson));
        assert_eq!(turns.record(r#"{"payload":{}}"#), Err(BadRecord::NotJson));
        assert_eq!(
            turns.record(r#"{"type":"event_msg","payload":"x"}"#),
            Ok(None)
        );
    }

    #[test]
    fn session_meta_fields_and_subagents() {
        let meta = |payload: &str| {
            session_meta(&format!(
                r#"{{"timestamp":"2026-12-02T16:10:09.569Z","type":"session_meta","payload":{payload}}}"#
            ))
        };
        let ok = meta(r#"{"id":"01a23785-4104-78f1-b4f0-247bed73e273","timestamp":"2026-12-02T16:10:09.546Z","cwd":"/r","source":"exec"}"#).expect("valid");
        assert_eq!(
            ok,
            SessionMeta {
                id: "01a23785-4104-78f1-b4f0-247bed73e273".into(),
                cwd: "/r".into(),
                created_ms: 1_796_227_809_546,
                subagent: false
            }
        );
        let by_source = meta(r#"{"id":"01a23785-4104-78f1-b4f0-247bed73e273","cwd":"/r","source":{"subagent":{"parent":"x"}}}"#).expect("valid");
        assert!(by_source.subagent);
        assert_eq!(
            by_source.created_ms, 1_796_227_809_569,
            "falls back to the envelope timestamp"
        );
        let by_thread = meta(r#"{"id":"01a23785-4104-78f1-b4f0-247bed73e273","cwd":"/r","source":"cli","thread_source":"subagent"}"#).expect("valid");
        assert!(by_thread.subagent);
        assert_eq!(
            meta(r#"{"id":"not-a-uuid","cwd":"/r"}"#),
            Err(BadRecord::BadSessionMeta)
        );
        assert_eq!(
            meta(r#"{"id":"01a23785-4104-78f1-b4f0-247bed73e273"}"#),
            Err(BadRecord::BadSessionMeta)
        );
        assert_eq!(
            session_meta(r#"{"type":"event_msg","payload":{}}"#),
            Err(BadRecord::BadSessionMeta)
        );
    }
}
