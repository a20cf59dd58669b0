//! The state machine fed with hub frames and bytes, without a terminal.

use super::*;

const SIZE: PaneArea = PaneArea { rows: 10, cols: 40 };

fn app() -> App {
    App::new(LeaderKey::default(), SIZE, FirstPane::Existing)
}

fn created(app: &mut App, pane: u64) -> Vec<ClientRequest> {
    app.on_frame(Frame::Message(HubMessage::Created {
        pane,
        title: Some(format!("p{pane}")),
        rows: SIZE.rows,
        cols: SIZE.cols,
        replaces: None,
    }))
}

fn exited(app: &mut App, pane: u64, held: bool) {
    app.on_frame(Frame::Message(HubMessage::Exited {
        pane,
        code: Some(1),
        held,
    }));
}

fn output(app: &mut App, pane: u64, bytes: &[u8]) {
    app.on_frame(Frame::Output {
        pane,
        bytes: Bytes::copy_from_slice(bytes),
    });
}

fn report(pane: u64, state: &str) -> Frame {
    Frame::Message(HubMessage::Recovery(RecoveryReport {
        pane,
        state: state.into(),
        detail: None,
        deadline_epoch: None,
        attempt: 0,
    }))
}

fn titles(app: &App) -> Vec<&str> {
    app.panes.iter().map(|pane| pane.title.as_str()).collect()
}

#[test]
fn keys_go_to_the_pane_in_view_except_the_leader() {
    let mut app = app();
    created(&mut app, 7);
    assert_eq!(
        app.on_input(b"ls -l\r"),
        [ClientRequest::Input {
            pane: 7,
            data: "ls -l\r".into()
        }]
    );
    // The leader twice sends the leader byte; text around it still goes in one write.
    assert_eq!(
        app.on_input(b"a\x06\x06b"),
        [
            ClientRequest::Input {
                pane: 7,
                data: "a".into()
            },
            ClientRequest::Input {
                pane: 7,
                data: "\x06".into()
            },
            ClientRequest::Input {
                pane: 7,
                data: "b".into()
            },
        ]
    );
    assert_eq!(app.mode, Mode::Normal);
    // Nothing is held on a running pane: `r` says so and sends nothing.
    assert_eq!(app.on_input(b"\x06r"), []);
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.on_input(b"\x06x"), []);
    assert_eq!(app.mode, Mode::ConfirmClose(7));
    assert_eq!(app.on_input(b"n"), [], "anything but y keeps the pane");
    assert_eq!(app.on_input(b"\x06xy"), [ClientRequest::Close { pane: 7 }]);
    assert!(app.on_input(b"\x06d").is_empty());
    assert_eq!(app.outcome, Some(Outcome::Detached));
}

#[test]
fn a_new_pane_of_ours_comes_into_view_and_others_do_not() {
    let mut app = app();
    created(&mut app, 1);
    let create = app.on_input(b"\x06c");
    assert!(matches!(
        create[..],
        [ClientRequest::Create {
            rows: Some(10),
            cols: Some(40),
            ..
        }]
    ));
    created(&mut app, 2);
    assert_eq!(app.active_pane().map(|p| p.id), Some(2));
    created(&mut app, 3);
    assert_eq!(
        app.active_pane().map(|p| p.id),
        Some(2),
        "a pane someone else opened"
    );
    app.on_input(b"\x06n");
    assert_eq!(app.active_pane().map(|p| p.id), Some(3));
    app.on_input(b"\x06n");
    assert_eq!(app.active_pane().map(|p| p.id), Some(1), "n wraps");
    app.on_input(b"\x06p\x06p");
    assert_eq!(app.active_pane().map(|p| p.id), Some(2));
    app.on_input(b"\x069");
    assert_eq!(app.active_pane().map(|p| p.id), Some(2), "no ninth pane");
}

#[test]
fn a_pane_at_another_size_is_brought_to_ours_after_its_replay() {
    let mut app = app();
    let resize = app.on_frame(Frame::Message(HubMessage::Created {
        pane: 4,
        title: None,
        rows: 24,
        cols: 80,
        replaces: None,
    }));
    assert_eq!(
        resize,
        [ClientRequest::Resize {
            pane: 4,
            rows: 10,
            cols: 40
        }]
    );
    output(&mut app, 4, b"replayed at 80 columns");
    app.on_frame(Frame::Message(HubMessage::Resized {
        pane: 4,
        rows: 10,
        cols: 40,
    }));
    let screen = app.panes[0].screen.screen();
    assert_eq!(screen.size().1.get(), 40);
    assert!(screen.contents().starts_with("replayed at 80 columns"));
    assert_eq!(
        app.resize(PaneArea { rows: 5, cols: 20 }),
        [ClientRequest::Resize {
            pane: 4,
            rows: 5,
            cols: 20
        }]
    );
    assert_eq!(
        app.resize(PaneArea { rows: 5, cols: 20 }),
        [],
        "no change, no request"
    );
}

/// The hub keeps every client's size for a pane (docs/hub.md, "Shared sizes"), so a pane is
/// sized even when it is at ours; leader `z` sizes every running pane again.
#[test]
fn every_pane_is_sized_even_at_our_size_and_leader_z_sizes_them_again() {
    let ours = |pane| ClientRequest::Resize {
        pane,
        rows: SIZE.rows,
        cols: SIZE.cols,
    };
    let mut app = app();
    assert_eq!(created(&mut app, 1), [ours(1)]);
    created(&mut app, 2);
    exited(&mut app, 2, false);
    app.on_frame(Frame::Message(HubMessage::Resized {
        pane: 1,
        rows: 30,
        cols: 120,
    }));
    assert_eq!(app.panes[0].screen.screen().size().1.get(), 120);
    assert_eq!(
        app.on_input(b"\x06z"),
        [ours(1)],
        "an exited pane has no PTY"
    );
    assert_eq!(app.panes[0].screen.screen().size().1.get(), 40);
    let notice = app.notice(Instant::now()).unwrap_or_default();
    assert!(notice.contains("this terminal's size"), "{notice}");
}

#[test]
fn an_exited_pane_stays_with_its_screen_until_it_is_closed() {
    let mut app = app();
    created(&mut app, 1);
    created(&mut app, 2);
    output(&mut app, 1, b"You've hit your usage limit.");
    exited(&mut app, 1, true);
    assert_eq!(titles(&app), ["p1", "p2"]);
    assert!(!app.panes[0].alive);
    // Keys for an exited pane are not sent; the notice says what to do instead, unless
    // they are an escape sequence, which the outer terminal also sends by itself.
    let now = Instant::now();
    assert!(app.on_input(b"typed into an exited pane").is_empty());
    assert_eq!(
        app.notice(now),
        Some("1:p1 has ended; Ctrl+F c opens a new pane")
    );
    app.on_frame(report(1, "waiting_for_reset"));
    assert_eq!(app.panes[0].marker().as_deref(), Some("⏳"));
    assert!(app.panes[0].pending_relaunch());
    app.notice = None;
    assert!(app.on_input(b"\x1b[I").is_empty());
    assert_eq!(app.notice(now), None);
    assert!(app.on_input(b"x").is_empty());
    assert_eq!(
        app.notice(now),
        Some("1:p1 waits for its plugin; nothing is typed into it")
    );
    // The hold ends: the marker goes, the pane and its screen stay, plainly exited.
    app.on_frame(report(1, "cancelled"));
    assert_eq!(titles(&app), ["p1", "p2"]);
    assert_eq!(app.panes[0].marker(), None);
    assert!(!app.panes[0].held && !app.panes[0].pending_relaunch());
    app.parse_pending(usize::MAX, Instant::now());
    assert!(
        app.panes[0]
            .screen
            .screen()
            .contents()
            .contains("usage limit")
    );
    // A report for a pane this client does not know makes no tab.
    app.on_frame(report(9, "backoff"));
    assert_eq!(titles(&app), ["p1", "p2"]);
    // Unheld exits stay too; `closed` removes a pane, and the last one ends the TUI.
    exited(&mut app, 2, false);
    assert_eq!(titles(&app), ["p1", "p2"]);
    app.on_frame(Frame::Message(HubMessage::Closed { pane: 1 }));
    app.on_frame(Frame::Message(HubMessage::Closed { pane: 2 }));
    assert!(app.panes.is_empty());
    assert_eq!(app.outcome, Some(Outcome::NoPanes));
}

#[test]
fn a_relaunch_takes_the_old_pane_s_tab() {
    let mut app = app();
    created(&mut app, 1);
    created(&mut app, 2);
    exited(&mut app, 1, true);
    app.on_frame(Frame::Message(HubMessage::Created {
        pane: 3,
        title: Some("p1".to_owned()),
        rows: SIZE.rows,
        cols: SIZE.cols,
        replaces: Some(1),
    }));
    let ids: Vec<u64> = app.panes.iter().map(|pane| pane.id).collect();
    assert_eq!(ids, [3, 2], "tab 1 is still the session");
    assert!(app.panes[0].alive);
    assert_eq!(app.active_pane().map(|p| p.id), Some(3));
}

#[test]
fn a_program_title_names_the_tab_until_it_is_cleared() {
    let mut app = app();
    created(&mut app, 1);
    created(&mut app, 2);
    let title = |pane: u64, title: Option<&str>| {
        Frame::Message(HubMessage::Title {
            pane,
            title: title.map(str::to_owned),
        })
    };
    app.on_frame(title(2, Some("build")));
    let shown: Vec<&str> = app.panes.iter().map(Pane::shown_title).collect();
    assert_eq!(shown, ["p1", "build"]);
    assert_eq!(app.label(1), "2:build", "notices name the tab as it reads");
    app.on_frame(title(2, None));
    assert_eq!(app.panes[1].shown_title(), "p2");
    app.on_frame(title(9, Some("unknown pane")));
    assert_eq!(titles(&app), ["p1", "p2"]);
}

#[test]
fn cancel_tells_the_truth() {
    let mut app = app();
    created(&mut app, 1);
    app.on_frame(report(1, "waiting_for_reset"));
    // A running pane: nothing is held, nothing is sent, and the screen says so.
    assert!(app.on_input(b"\x06r").is_empty());
    let said = app.notice(Instant::now()).expect("a notice").to_owned();
    assert!(
        said.starts_with("nothing to cancel: 1:p1 is running"),
        "{said}"
    );
    assert!(
        app.panes[0].marker().is_some(),
        "the marker stays: it is true"
    );
    // A held pane: asked first; only `y` cancels.
    exited(&mut app, 1, true);
    assert!(app.on_input(b"\x06r").is_empty());
    assert_eq!(app.mode, Mode::ConfirmCancel(1));
    assert!(app.on_input(b"n").is_empty());
    assert_eq!(app.mode, Mode::Normal);
    app.on_input(b"\x06r");
    assert_eq!(
        app.on_input(b"y"),
        [ClientRequest::CancelRecovery { pane: 1 }]
    );
    // Only the hub's `cancelled` says it is over.
    app.on_frame(report(1, "cancelled"));
    let said = app.notice(Instant::now()).expect("a notice").to_owned();
    assert!(
        said.starts_with("1:p1: recovery ended; it stays exited"),
        "{said}"
    );
    assert_eq!(titles(&app), ["p1"], "the pane and its screen stay");
    // Plainly exited now: nothing to cancel, and how to close it.
    app.on_input(b"\x06r");
    let said = app.notice(Instant::now()).expect("a notice").to_owned();
    assert!(said.contains("has exited and nothing is held"), "{said}");
}

#[test]
fn a_settled_report_clears_the_marker_of_a_live_pane() {
    let mut app = app();
    created(&mut app, 1);
    app.on_frame(report(1, "needs_attention"));
    assert!(app.panes[0].marker().is_some());
    app.on_frame(report(1, "idle"));
    assert_eq!(app.panes[0].marker(), None);
    assert_eq!(titles(&app), ["p1"], "a live pane stays");
    app.on_frame(report(5, "idle"));
    assert_eq!(
        titles(&app),
        ["p1"],
        "no tab for a settled report of an unknown pane"
    );
}

#[test]
fn a_second_hello_starts_over_and_keeps_the_pane_in_view() {
    let mut app = app();
    app.on_frame(Frame::Message(HubMessage::Hello { version: 1 }));
    created(&mut app, 1);
    created(&mut app, 2);
    app.on_input(b"\x062");
    output(&mut app, 2, b"before");
    app.on_frame(Frame::Message(HubMessage::Hello { version: 1 }));
    assert!(app.panes.is_empty());
    assert_eq!(app.outcome, None, "a replay is not the end of the panes");
    created(&mut app, 1);
    created(&mut app, 2);
    output(&mut app, 2, b"replayed");
    app.parse_pending(usize::MAX, Instant::now());
    let pane = app.active_pane().expect("a pane in view");
    assert_eq!(pane.id, 2);
    assert_eq!(
        pane.screen.screen().contents(),
        "replayed",
        "no state from before"
    );
}

#[test]
fn a_leader_pressed_as_the_hub_drops_the_client_still_commands_the_tui() {
    let mut app = app();
    app.on_frame(Frame::Message(HubMessage::Hello { version: 1 }));
    created(&mut app, 1);
    created(&mut app, 2);
    assert!(app.on_input(b"\x06").is_empty());
    app.on_frame(Frame::Message(HubMessage::Hello { version: 1 }));
    created(&mut app, 1);
    created(&mut app, 2);
    assert!(
        app.on_input(b"2").is_empty(),
        "the 2 is not typed into a pane"
    );
    assert_eq!(app.active_pane().map(|pane| pane.id), Some(2));
}

#[test]
fn attention_marks_a_pane_out_of_view_until_it_is_viewed() {
    let mut app = app();
    created(&mut app, 1);
    created(&mut app, 2);
    app.on_frame(Frame::Message(HubMessage::Attention { pane: 1 }));
    assert!(!app.panes[0].unread, "the pane in view is seen already");
    app.on_frame(Frame::Message(HubMessage::Attention { pane: 2 }));
    assert!(app.panes[1].unread && app.bell);
    app.on_input(b"\x062");
    assert!(!app.panes[1].unread);
}

#[test]
fn news_after_the_replay_is_kept_to_be_told_once() {
    let mut app = app();
    app.on_frame(Frame::Message(HubMessage::Hello { version: 1 }));
    created(&mut app, 1);
    created(&mut app, 2);
    // The replay is what was true before this client came: nothing to tell.
    app.on_frame(report(1, "needs_attention"));
    assert!(app.untold.is_empty());
    app.on_frame(Frame::Message(HubMessage::Live));
    app.on_frame(Frame::Message(HubMessage::Attention { pane: 2 }));
    app.on_frame(report(1, "needs_attention"));
    app.on_frame(report(2, "needs_attention"));
    app.on_frame(Frame::Message(HubMessage::Attention { pane: 2 }));
    let told: Vec<String> = app.untold.iter().map(|notice| notice.text()).collect();
    assert_eq!(told, ["pane 2 wants you back", "pane 2 needs you"]);
}

#[test]
fn a_deadline_in_view_counts_down() {
    let mut app = app();
    created(&mut app, 1);
    created(&mut app, 2);
    assert!(!app.counting_down());
    let timed = |pane| {
        Frame::Message(HubMessage::Recovery(RecoveryReport {
            pane,
            state: "waiting_for_reset".into(),
            detail: None,
            deadline_epoch: Some(1_771_890_527),
            attempt: 0,
        }))
    };
    app.on_frame(timed(2));
    assert!(!app.counting_down(), "its chip is not on screen");
    app.on_frame(report(1, "backoff"));
    assert!(!app.counting_down(), "no deadline, nothing counts");
    app.on_frame(timed(1));
    assert!(app.counting_down());
    app.on_frame(report(1, "idle"));
    assert!(!app.counting_down());
}

#[test]
fn output_past_the_limit_is_skipped_ahead_to_its_latest_bytes() {
    let mut app = app();
    created(&mut app, 1);
    // More than the limit, in chunks; nothing parsed yet.
    let chunk = vec![b'a'; 64 * 1024];
    for _ in 0..(SKIP_AHEAD_AT / chunk.len()) {
        output(&mut app, 1, &chunk);
    }
    assert_eq!(app.skips, 0);
    output(&mut app, 1, b"\x1b[2J\x1b[Hthe latest line");
    assert_eq!(app.skips, 1);
    assert_eq!(app.panes[0].pending_len, KEEP_ON_SKIP);
    // While the flood lasts, a round parses a little of it, whatever the budget.
    let flowing = |app: &App| app.panes[0].last_output;
    app.parse_pending(usize::MAX, flowing(&app));
    assert_eq!(app.panes[0].pending_len, KEEP_ON_SKIP - FLOOD_BUDGET);
    output(&mut app, 1, &chunk);
    app.parse_pending(usize::MAX, flowing(&app) + FLOOD_PAUSE / 2);
    assert_eq!(
        app.panes[0].pending_len,
        KEEP_ON_SKIP - 2 * FLOOD_BUDGET + chunk.len()
    );
    // Once nothing has come for a moment the flood has paused or ended, and where it is
    // is on the screen at once.
    for _ in 0..4 {
        output(&mut app, 1, &chunk);
    }
    output(&mut app, 1, b"\x1b[2J\x1b[Hthe latest line");
    app.parse_pending(usize::MAX, flowing(&app));
    assert!(app.panes[0].pending_len > KEEP_ON_SKIP);
    app.parse_pending(usize::MAX, flowing(&app) + FLOOD_PAUSE);
    assert!(!app.has_pending_output());
    assert!(
        app.panes[0]
            .screen
            .screen()
            .contents()
            .starts_with("the latest line")
    );
    // A pause is not the end: output that comes soon after is still a flood's, a little
    // a round. (Arrivals read the real clock, and the parsing above may have taken a while.)
    app.panes[0].last_output = Instant::now();
    output(&mut app, 1, &chunk);
    app.parse_pending(usize::MAX, flowing(&app));
    assert_eq!(app.panes[0].pending_len, chunk.len() - FLOOD_BUDGET);
    app.parse_pending(usize::MAX, flowing(&app) + FLOOD_PAUSE);
    // Quiet for longer, it is over: what comes next is parsed whole.
    app.panes[0].last_output -= FLOOD_QUIET;
    output(&mut app, 1, &chunk);
    app.parse_pending(usize::MAX, flowing(&app));
    assert!(!app.has_pending_output());
}

#[test]
fn scrollback_mode_moves_through_history_and_leaves_on_q() {
    let mut app = app();
    created(&mut app, 1);
    let lines: String = (1..=50).map(|n| format!("line {n}\r\n")).collect();
    output(&mut app, 1, lines.as_bytes());
    app.parse_pending(usize::MAX, Instant::now());
    app.on_input(b"\x06[");
    assert_eq!(app.mode, Mode::Scrollback(0));
    app.on_input(b"\x1b[5~");
    assert_eq!(app.mode, Mode::Scrollback(9));
    assert!(
        app.panes[0]
            .screen
            .screen()
            .contents()
            .starts_with("line 33")
    );
    // The arrows move copy mode's cursor, which keeps its row on a page; the view
    // follows it past the top.
    app.on_input(b"\x1b[A\x1b[A\x1b[B");
    assert_eq!(app.mode, Mode::Scrollback(9));
    app.on_input(b"kkkkkkkkk");
    assert_eq!(app.mode, Mode::Scrollback(10));
    assert!(app.on_input(b"these are not sent while reading").is_empty());
    app.on_input(b"q");
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.panes[0].screen.screen().scrollback(), 0);
}

/// The text on the row of the pane in view where `line` of copy mode is drawn.
fn row_text(app: &App, line: i64) -> String {
    let screen = app.panes[app.active].screen.screen();
    let row = line + i64::try_from(screen.scrollback()).unwrap();
    let row = u16::try_from(row).expect("the line is in view");
    assert!(row < SIZE.rows, "the line is in view");
    screen
        .contents_between(row, 0, row, SIZE.cols)
        .trim_end()
        .to_owned()
}

#[test]
fn copy_mode_searches_the_whole_history_and_copies_the_selection_as_osc52() {
    let mut app = app();
    created(&mut app, 1);
    let lines: String = (1..=300)
        .map(|n| match n {
            7 | 42 => format!("needle {n}   \r\n"),
            n => format!("line {n}\r\n"),
        })
        .collect();
    output(&mut app, 1, lines.as_bytes());
    app.parse_pending(usize::MAX, Instant::now());
    // A capital makes the search case-sensitive.
    app.on_input(b"\x06[/Needle\r");
    assert!(app.copy_prompt(0).contains("\"Needle\" not found"));
    assert_eq!(app.copy.found, None);
    // Backspace takes back a character.
    app.on_input(b"/needlX\x7f\x7fle");
    assert_eq!(app.copy_prompt(0), "search up: needle");
    app.on_input(b"\r");
    let found = app.copy.found.expect("a match");
    assert_eq!(row_text(&app, found.line), "needle 42");
    assert_eq!((found.start, found.end), (0, 6));
    assert_eq!(
        app.mode,
        Mode::Scrollback(app.panes[0].screen.screen().scrollback())
    );
    assert!(matches!(app.mode, Mode::Scrollback(up) if up > 250));
    app.on_input(b"n");
    assert_eq!(row_text(&app, app.copy.found.unwrap().line), "needle 7");
    app.on_input(b"n");
    assert_eq!(row_text(&app, app.copy.found.unwrap().line), "needle 7");
    assert!(app.copy_prompt(0).contains("no older \"needle\""));
    app.on_input(b"N");
    assert_eq!(row_text(&app, app.copy.found.unwrap().line), "needle 42");
    app.on_input(b"/absent\r");
    assert!(app.copy_prompt(0).contains("\"absent\" not found"));
    assert_eq!(row_text(&app, app.copy.cursor.line), "needle 42");

    // A stream selection from the match to the end of the line two below.
    app.on_input(b"vjj$");
    let (start, end) = app.copy.selection().unwrap();
    assert_eq!((end.line - start.line, start.col, end.col), (2, 0, 6));
    app.on_input(b"y");
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.panes[0].screen.screen().scrollback(), 0);
    assert_eq!(app.notice(Instant::now()), Some("copied 3 lines"));
    let copied = app.clipboard.take().unwrap();
    assert_eq!(copied, "needle 42\nline 43\nline 44");
    assert_eq!(
        crate::copy::osc52(&copied, crate::copy::TmuxClipboard::Outside),
        "\x1b]52;c;bmVlZGxlIDQyCmxpbmUgNDMKbGluZSA0NA==\x07"
    );
}

#[test]
fn copy_mode_copies_wide_characters_once_and_joins_a_wrapped_line() {
    let mut app = app();
    created(&mut app, 1);
    let long = "x".repeat(50);
    output(
        &mut app,
        1,
        format!("漢字 ok   \r\n{long}\r\nend\r\n").as_bytes(),
    );
    app.parse_pending(usize::MAX, Instant::now());
    app.on_input(b"\x06[");
    assert_eq!(app.copy.cursor.line, 4);
    app.on_input(b"gw");
    assert_eq!((app.copy.cursor.line, app.copy.cursor.col), (0, 5));
    app.on_input(b"b");
    assert_eq!(app.copy.cursor.col, 0);
    app.on_input(b"q");
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.clipboard, None, "q leaves without copying");

    app.on_input(b"\x06[y");
    assert!(app.copy_prompt(0).contains("nothing selected"));
    app.on_input(b"\x1b");
    assert_eq!(app.clipboard, None, "Esc leaves without copying");

    app.on_input(b"\x06[g v jjj$\r");
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(
        app.clipboard.as_deref(),
        Some(format!("漢字 ok\n{long}\nend").as_str())
    );
}

fn resize(pane: u64, rows: u16, cols: u16) -> ClientRequest {
    ClientRequest::Resize { pane, rows, cols }
}

fn in_view(app: &App) -> Vec<u64> {
    let view = app.view();
    view.cells
        .iter()
        .map(|&(index, _)| app.panes[index].id)
        .collect()
}

/// The pane area is 40×10: two panes side by side have a header row each and a rule
/// between them, so their screens are 19 and 20 columns by 9 rows.
#[test]
fn a_split_shows_panes_side_by_side_each_told_the_size_of_its_cell() {
    let mut app = app();
    created(&mut app, 1);
    assert!(matches!(
        app.on_input(b"\x06s")[..],
        [ClientRequest::Create { .. }]
    ));
    assert_eq!(
        created(&mut app, 2),
        [resize(1, 9, 19), resize(2, 9, 20)],
        "the new pane joins the split beside the first"
    );
    assert_eq!(in_view(&app), [1, 2]);
    assert_eq!(app.active_pane().map(|p| p.id), Some(2));
    assert!(app.view().tabs);
    assert_eq!(
        app.on_input(b"\x06\x1b[D"),
        [],
        "moving the focus sizes nothing"
    );
    assert_eq!(app.active_pane().map(|p| p.id), Some(1));
    app.on_input(b"\x06l");
    assert_eq!(app.active_pane().map(|p| p.id), Some(2));
    app.on_input(b"\x06o");
    assert_eq!(app.active_pane().map(|p| p.id), Some(1), "o goes round");
    app.on_input(b"\x06o");

    // Zoomed, the pane in view has the whole area; zoomed out, its cell again. The other
    // keeps its cell's size meanwhile.
    assert_eq!(app.on_input(b"\x06f"), [resize(2, 10, 40)]);
    assert_eq!(in_view(&app), [2]);
    assert_eq!(app.on_input(b"\x06f"), [resize(2, 9, 20)]);

    // A pane someone else opens is a tab out of view, at the whole area's size; going to
    // it puts it in the focused cell, and the pane it replaces goes back to the whole size.
    assert_eq!(created(&mut app, 3), [resize(3, 10, 40)]);
    assert_eq!(in_view(&app), [1, 2]);
    assert_eq!(
        app.on_input(b"\x06n"),
        [resize(2, 10, 40), resize(3, 9, 20)]
    );
    assert_eq!(in_view(&app), [1, 3]);
    // Going to a pane shown in another cell moves the focus there.
    assert_eq!(app.on_input(b"\x061"), []);
    assert_eq!(in_view(&app), [1, 3]);
    assert_eq!(app.active_pane().map(|p| p.id), Some(1));

    // Another client's size for a pane is not fought over.
    assert_eq!(
        app.on_frame(Frame::Message(HubMessage::Resized {
            pane: 3,
            rows: 30,
            cols: 120,
        })),
        []
    );

    // The grid: every pane on the whole screen but the notice row, no tab row.
    assert_eq!(
        app.on_input(b"\x06g"),
        [resize(1, 10, 12), resize(2, 10, 13), resize(3, 10, 13)]
    );
    assert_eq!(in_view(&app), [1, 2, 3]);
    assert!(!app.view().tabs);
    app.on_input(b"\x06g");
    assert_eq!(in_view(&app), [1, 3], "back to the split");

    // A pane of the split that closes leaves the other alone, at the whole size.
    assert_eq!(
        app.on_frame(Frame::Message(HubMessage::Closed { pane: 1 })),
        [resize(3, 10, 40)]
    );
    assert_eq!(in_view(&app), [3]);
}

#[test]
fn a_relaunch_keeps_its_cell_and_a_split_holds_at_most_four() {
    let mut app = app();
    created(&mut app, 1);
    for pane in 2..=4 {
        app.on_input(b"\x06s");
        created(&mut app, pane);
    }
    assert_eq!(in_view(&app), [1, 2, 3, 4]);
    assert_eq!(app.on_input(b"\x06s"), [], "a fifth is refused");
    let notice = app.notice(Instant::now()).unwrap_or_default();
    assert!(notice.contains("at most 4"), "{notice}");

    exited(&mut app, 2, true);
    app.on_frame(Frame::Message(HubMessage::Created {
        pane: 5,
        title: None,
        rows: 24,
        cols: 80,
        replaces: Some(2),
    }));
    assert_eq!(in_view(&app), [1, 5, 3, 4], "the relaunch takes its cell");
    assert_eq!(
        app.panes[1].screen.screen().size(),
        app.panes[3].screen.screen().size(),
        "the relaunch is sized to its cell, as the pane below it"
    );

    // `u` ends the split: the pane in view alone, the others tabs.
    app.on_input(b"\x06u");
    assert_eq!(in_view(&app), [4]);
    assert_eq!(app.panes.len(), 4);
}
