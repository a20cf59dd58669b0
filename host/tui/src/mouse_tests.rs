//! The state machine fed with the SGR mouse reports a terminal sends.

use bytes::Bytes;
use nightcrow_client_protocol::{ClientRequest, Frame, HubMessage};
use nightcrow_config::LeaderKey;

use crate::FirstPane;
use crate::app::{App, Mode, PaneArea};
use crate::draw::InputModes;

const SIZE: PaneArea = PaneArea { rows: 10, cols: 40 };

fn app() -> App {
    App::new(LeaderKey::default(), SIZE, FirstPane::Existing)
}

fn created(app: &mut App, pane: u64) {
    app.on_frame(Frame::Message(HubMessage::Created {
        pane,
        title: Some(format!("p{pane}")),
        rows: SIZE.rows,
        cols: SIZE.cols,
        replaces: None,
    }));
}

fn output(app: &mut App, pane: u64, bytes: &[u8]) {
    app.on_frame(Frame::Output {
        pane,
        bytes: Bytes::copy_from_slice(bytes),
    });
    app.parse_pending(usize::MAX, std::time::Instant::now());
}

fn active(app: &App) -> u64 {
    app.active_pane().unwrap().id
}

fn typed(pane: u64, data: &str) -> ClientRequest {
    ClientRequest::Input {
        pane,
        data: data.to_owned(),
    }
}

/// A press and its release at the 1-based `column` and `row` of the terminal.
fn click(column: u16, row: u16) -> Vec<u8> {
    format!("\x1b[<0;{column};{row}M\x1b[<0;{column};{row}m").into_bytes()
}

fn wheel(up: bool, column: u16, row: u16) -> Vec<u8> {
    format!("\x1b[<{};{column};{row}M", if up { 64 } else { 65 }).into_bytes()
}

/// The terminal's 1-based column and row of the `column`, `row` (0-based) of the screen
/// of the pane at `index`.
fn on_screen(app: &App, index: usize, column: u16, row: u16) -> (u16, u16) {
    let cell = app.view().cell_of(index).expect("shown");
    (cell.screen.x + column + 1, cell.screen.y + row + 1)
}

/// Panes 1 and 3 in a split, 2 a tab; 1 in view.
fn split() -> App {
    let mut app = app();
    created(&mut app, 1);
    created(&mut app, 2);
    assert!(!app.on_input(b"\x06s").is_empty());
    created(&mut app, 3);
    app.on_input(b"\x061");
    assert_eq!(app.view().cells.len(), 2);
    assert_eq!(active(&app), 1);
    app
}

#[test]
fn a_click_on_a_tab_or_a_cell_brings_its_pane_into_view_and_is_not_typed() {
    let mut app = app();
    created(&mut app, 1);
    created(&mut app, 2);
    // " 1:p1 │ 2:p2 │": tab 2 from column 8.
    assert_eq!(app.on_input(&click(9, 1)), []);
    assert_eq!(active(&app), 2);
    // Keys around a report go to the pane in view, the report to no one.
    let mut bytes = b"ab".to_vec();
    bytes.extend(click(2, 1));
    bytes.extend(b"cd");
    assert_eq!(app.on_input(&bytes), [typed(2, "ab"), typed(1, "cd")]);
    assert_eq!(active(&app), 1);
    // After the leader, a click is a click, and the prompt is gone.
    app.on_input(b"\x06");
    assert_eq!(app.mode, Mode::Leader);
    assert_eq!(app.on_input(&click(9, 1)), []);
    assert_eq!((active(&app), app.mode), (2, Mode::Normal));

    let mut app = split();
    let (column, row) = on_screen(&app, 2, 3, 3);
    assert_eq!(app.on_input(&click(column, row)), []);
    assert_eq!(active(&app), 3);
    let header = app.view().cell_of(0).unwrap().header;
    assert_eq!(app.on_input(&click(header.x + 4, header.y + 1)), []);
    assert_eq!(active(&app), 1);
}

#[test]
fn the_wheel_scrolls_the_history_of_the_pane_under_it_and_leaves_at_the_bottom() {
    let mut app = split();
    let lines: String = (1..=40).map(|n| format!("line {n}\r\n")).collect();
    output(&mut app, 3, lines.as_bytes());
    let (column, row) = on_screen(&app, 2, 1, 1);
    assert_eq!(app.on_input(&wheel(true, column, row)), []);
    assert_eq!((active(&app), app.mode), (3, Mode::Scrollback(3)));
    app.on_input(&wheel(true, column, row));
    assert_eq!(app.mode, Mode::Scrollback(6));
    app.on_input(&wheel(false, column, row));
    assert_eq!(app.mode, Mode::Scrollback(3));
    app.on_input(&wheel(false, column, row));
    assert_eq!(
        app.mode,
        Mode::Normal,
        "at the bottom, scrollback mode ends"
    );
    assert_eq!(app.panes[2].screen.screen().scrollback(), 0);
    // No history: nothing to scroll to.
    let (column, row) = on_screen(&app, 0, 1, 1);
    assert_eq!(app.on_input(&wheel(true, column, row)), []);
    assert_eq!((active(&app), app.mode), (1, Mode::Normal));
    // An alternate screen has none either: a pager gets arrow keys.
    output(&mut app, 1, b"\x1b[?1049h");
    assert_eq!(
        app.on_input(&wheel(true, column, row)),
        [typed(1, "\x1b[A\x1b[A\x1b[A")]
    );
    output(&mut app, 1, b"\x1b[?1h");
    assert_eq!(
        app.on_input(&wheel(false, column, row)),
        [typed(1, "\x1bOB\x1bOB\x1bOB")]
    );
}

#[test]
fn a_program_asking_for_the_mouse_gets_it_in_its_own_cell_and_encoding() {
    let mut app = split();
    output(&mut app, 1, b"\x1b[?1000h\x1b[?1006h");
    let (column, row) = on_screen(&app, 0, 4, 2);
    assert_eq!(
        app.on_input(&click(column, row)),
        [typed(1, "\x1b[<0;5;3M"), typed(1, "\x1b[<0;5;3m")]
    );
    // Press and release only: no drags.
    let drag = format!("\x1b[<32;{column};{row}M");
    assert_eq!(app.on_input(drag.as_bytes()), []);
    assert_eq!(
        app.on_input(&wheel(true, column, row)),
        [typed(1, "\x1b[<64;5;3M")],
        "the wheel is the program's"
    );
    // A drag the program asked for, held past its cell: at the cell's edge.
    output(&mut app, 1, b"\x1b[?1002h\x1b[?1006l");
    let cell = app.view().cell_of(0).unwrap().screen;
    let press = format!("\x1b[<0;{column};{row}M");
    let beyond = format!("\x1b[<32;{};{row}M", cell.x + cell.width + 5);
    let release = format!("\x1b[<0;{};{row}m", cell.x + cell.width + 5);
    let edge = char::from(32 + u8::try_from(cell.width).unwrap());
    assert_eq!(
        app.on_input(format!("{press}{beyond}{release}").as_bytes()),
        [
            typed(1, "\x1b[M %#"),
            typed(1, &format!("\x1b[M@{edge}#")),
            typed(1, &format!("\x1b[M#{edge}#")),
        ]
    );
    // Another pane is clicked into view, not told; a click back is not told either.
    let (other_column, other_row) = on_screen(&app, 2, 1, 1);
    assert_eq!(app.on_input(&click(other_column, other_row)), []);
    assert_eq!(active(&app), 3);
    assert_eq!(app.on_input(&click(column, row)), []);
    assert_eq!(active(&app), 1);
    // Reading its history, the wheel is the TUI's.
    output(&mut app, 1, "x\r\n".repeat(30).as_bytes());
    app.on_input(b"\x06[");
    assert_eq!(app.on_input(&wheel(true, column, row)), []);
    assert_eq!(app.mode, Mode::Scrollback(3));
}

#[test]
fn with_the_mouse_off_reports_go_to_the_pane_as_typed() {
    let mut app = app();
    app.mouse.on = false;
    created(&mut app, 1);
    created(&mut app, 2);
    let click = click(9, 1);
    let click = String::from_utf8(click).unwrap();
    assert_eq!(app.on_input(click.as_bytes()), [typed(1, &click)]);
    assert_eq!(active(&app), 1);
}

#[test]
fn the_terminal_reports_the_mouse_to_the_tui_or_mirrors_the_program() {
    let mut app = app();
    created(&mut app, 1);
    let from_nothing = |app: &App| InputModes::default().switch_to(InputModes::of(app));
    assert_eq!(from_nothing(&app), "\x1b[?1002h\x1b[?1006h");
    output(&mut app, 1, b"\x1b[?1003h");
    assert_eq!(from_nothing(&app), "\x1b[?1003h\x1b[?1006h");
    app.on_input(b"\x06");
    assert_eq!(
        from_nothing(&app),
        "\x1b[?1002h\x1b[?1006h",
        "every motion only while the keys are the pane's"
    );
    app.on_input(b"\x06");
    app.mouse.on = false;
    assert_eq!(from_nothing(&app), "\x1b[?1003h", "the program's, mirrored");
    output(&mut app, 1, b"\x1b[?1003l");
    assert_eq!(from_nothing(&app), "");
}

#[test]
fn the_wheel_starts_copy_mode_afresh_without_an_earlier_selection() {
    let mut app = split();
    let lines: String = (1..=40).map(|n| format!("line {n}\r\n")).collect();
    output(&mut app, 1, lines.as_bytes());
    // Leader `[`, `v` selects from the cursor, `k` widens it, `q` leaves.
    app.on_input(b"\x06[vk");
    assert!(app.copy.selection().is_some());
    app.on_input(b"q");
    assert_eq!(app.mode, Mode::Normal);
    let (column, row) = on_screen(&app, 0, 1, 1);
    app.on_input(&wheel(true, column, row));
    assert_eq!(app.mode, Mode::Scrollback(3));
    assert_eq!(app.copy.selection(), None, "the old selection came back");
}
