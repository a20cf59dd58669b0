//! The mouse (docs/tui.md, "Mouse"): the TUI asks the person's terminal for SGR mouse
//! reports and acts on them itself. A click on a tab or a cell brings its pane into view,
//! the wheel scrolls a pane's history, and a program that asked for mouse reports gets
//! them over its own cell, in its own coordinates and encoding. A report is never typed
//! into a pane as keys.

use nightcrow_client_protocol::ClientRequest;
use vt100::{MouseProtocolEncoding as Encoding, MouseProtocolMode as Wants};

use crate::Role;
use crate::app::{App, Mode};
use crate::keys::MouseReport;

/// Lines one wheel notch scrolls (and arrow keys it sends on an alternate screen).
const WHEEL_LINES: usize = 3;
/// Bits of a report's code.
const BUTTON: u16 = 0b11;
/// No button: a release in the X10 and UTF-8 encodings, a motion with no button held.
const NO_BUTTON: u16 = 3;
const MODIFIERS: u16 = 4 | 8 | 16;
const MOTION: u16 = 32;
const WHEEL: u16 = 64;

/// The mouse as the TUI holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mouse {
    /// `[tui] mouse`: the TUI reads the mouse. Off, the person's terminal keeps it, and a
    /// program's mouse reporting is mirrored onto it as the other input modes are.
    pub on: bool,
    /// The pane a press was passed to: its drags and its release go there too, wherever
    /// the pointer goes, as a terminal grabs the pointer while a button is down.
    held_by: Option<u64>,
}

impl Default for Mouse {
    fn default() -> Mouse {
        Mouse {
            on: true,
            held_by: None,
        }
    }
}

/// What is under the pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spot {
    Tab(usize),
    Header(usize),
    /// A pane's screen, at this 0-based column and row of it.
    Screen {
        index: usize,
        column: u16,
        row: u16,
    },
    Elsewhere,
}

impl App {
    /// One report from the person's terminal; returns the requests it makes.
    pub(crate) fn on_mouse(&mut self, report: MouseReport) -> Vec<ClientRequest> {
        let wheel = report.code & WHEEL != 0;
        let motion = !wheel && report.code & MOTION != 0;
        let press = !wheel && !motion && !report.release;
        if let Some(id) = self.mouse.held_by
            && !press
            && !wheel
        {
            if report.release {
                self.mouse.held_by = None;
            }
            return self.pass_held(id, report);
        }
        if report.release {
            return Vec::new();
        }
        let prompt = matches!(
            self.mode,
            Mode::Leader | Mode::Help | Mode::ConfirmClose(_) | Mode::ConfirmCancel(_)
        );
        if prompt {
            if motion {
                return Vec::new();
            }
            // A click or a notch answers a prompt as any other key does: it keeps things.
            self.mode = Mode::Normal;
            self.dirty = true;
        }
        match self.spot(report.column, report.row) {
            Spot::Tab(index) | Spot::Header(index) if press && index != self.active => {
                self.select(index);
                Vec::new()
            }
            Spot::Screen { index, column, row } => {
                self.on_screen(report, index, column, row, (press, wheel))
            }
            _ => Vec::new(),
        }
    }

    /// A report over the screen of the pane at `index`.
    fn on_screen(
        &mut self,
        report: MouseReport,
        index: usize,
        column: u16,
        row: u16,
        (press, wheel): (bool, bool),
    ) -> Vec<ClientRequest> {
        let pane = &self.panes[index];
        let reading_history = index == self.active && matches!(self.mode, Mode::Scrollback(_));
        let wants = pane.screen.screen().mouse_protocol_mode();
        if pane.alive && wants != Wants::None && !reading_history {
            if index != self.active {
                // A click on another pane is for the TUI: it takes the focus there. A notch
                // goes to that pane's program once it has the focus.
                if !press && !wheel {
                    return Vec::new();
                }
                self.select(index);
                if press {
                    return Vec::new();
                }
            }
            if press {
                self.mouse.held_by = Some(self.panes[index].id);
            }
            return self.pass_to(index, report, column, row);
        }
        if press && index != self.active {
            self.select(index);
            return Vec::new();
        }
        if wheel {
            return self.scroll(index, report.code & BUTTON);
        }
        Vec::new()
    }

    /// A drag or a release of a press passed to the pane `id`: at the pointer's place in
    /// that pane's cell, the nearest edge of it when the pointer is outside.
    fn pass_held(&mut self, id: u64, report: MouseReport) -> Vec<ClientRequest> {
        let Some(index) = self.panes.iter().position(|pane| pane.id == id) else {
            return Vec::new();
        };
        let Some(cell) = self.view().cell_of(index) else {
            return Vec::new();
        };
        let screen = cell.screen;
        let within = |at: u16, start: u16, length: u16| {
            at.saturating_sub(1)
                .saturating_sub(start)
                .min(length.saturating_sub(1))
        };
        let column = within(report.column, screen.x, screen.width);
        let row = within(report.row, screen.y, screen.height);
        self.pass_to(index, report, column, row)
    }

    /// The report as the program in the pane at `index` asked for it, if it asked for this
    /// kind (presses only, releases too, drags, every motion).
    fn pass_to(
        &self,
        index: usize,
        report: MouseReport,
        column: u16,
        row: u16,
    ) -> Vec<ClientRequest> {
        let screen = self.panes[index].screen.screen();
        let wants = screen.mouse_protocol_mode();
        let motion = report.code & (MOTION | WHEEL) == MOTION;
        let wanted = match wants {
            Wants::None => false,
            Wants::Press => !motion && !report.release,
            Wants::PressRelease => !motion,
            Wants::ButtonMotion => !motion || report.code & BUTTON != NO_BUTTON,
            Wants::AnyMotion => true,
        };
        if !wanted {
            return Vec::new();
        }
        let data = encode(
            report,
            column + 1,
            row + 1,
            wants,
            screen.mouse_protocol_encoding(),
        );
        self.type_into(index, data).into_iter().collect()
    }

    /// A wheel notch (`button` 0 up, 1 down) over a pane whose program did not ask for the
    /// mouse: it takes the focus and its history scrolls, scrollback mode coming and going
    /// with it. An alternate screen has no history: it gets arrow keys instead, as
    /// terminals do, so a pager or an editor scrolls.
    fn scroll(&mut self, index: usize, button: u16) -> Vec<ClientRequest> {
        let up = match button {
            0 => true,
            1 => false,
            _ => return Vec::new(),
        };
        if index != self.active {
            self.select(index);
        }
        let reading = match self.mode {
            Mode::Scrollback(offset) => Some(offset),
            _ => None,
        };
        let screen = self.panes[index].screen.screen();
        if reading.is_none() && screen.alternate_screen() {
            let arrow = match (up, screen.application_cursor()) {
                (true, true) => "\x1bOA",
                (true, false) => "\x1b[A",
                (false, true) => "\x1bOB",
                (false, false) => "\x1b[B",
            };
            return self
                .type_into(index, arrow.repeat(WHEEL_LINES))
                .into_iter()
                .collect();
        }
        let offset = reading.unwrap_or(0);
        let wanted = if up {
            offset + WHEEL_LINES
        } else {
            offset.saturating_sub(WHEEL_LINES)
        };
        let screen = self.panes[index].screen.screen_mut();
        screen.set_scrollback(wanted);
        let offset = screen.scrollback();
        if offset > 0 && reading.is_none() {
            self.enter_copy_mode(offset);
        } else if offset > 0 {
            self.mode = Mode::Scrollback(offset);
        } else if reading.is_some() {
            // Back at the bottom: scrollback mode ends, as `q` ends it.
            self.select(index);
        }
        self.dirty = true;
        Vec::new()
    }

    fn type_into(&self, index: usize, data: String) -> Option<ClientRequest> {
        let pane = &self.panes[index];
        (pane.alive && self.role != Role::Demo).then_some(ClientRequest::Input {
            pane: pane.id,
            data,
        })
    }

    /// What is at the 1-based `column` and `row` of the person's terminal.
    fn spot(&self, column: u16, row: u16) -> Spot {
        let (x, y) = (column.saturating_sub(1), row.saturating_sub(1));
        let view = self.view();
        if view.tabs && y == 0 {
            return crate::draw::tab_row(self, self.size.cols)
                .tab_at(usize::from(x))
                .map_or(Spot::Elsewhere, Spot::Tab);
        }
        let at = ratatui::layout::Position::new(x, y);
        for &(index, cell) in &view.cells {
            if cell.header.contains(at) {
                return Spot::Header(index);
            }
            if cell.screen.contains(at) {
                return Spot::Screen {
                    index,
                    column: x - cell.screen.x,
                    row: y - cell.screen.y,
                };
            }
        }
        Spot::Elsewhere
    }
}

/// `report` as a program that asked for mouse reporting `wants` in `encoding` reads it, at
/// the 1-based `column` and `row` of its own screen. X10 (the default) and UTF-8 say a
/// release as "no button" and carry each number as a character 32 above it, so they cap
/// what they can say: 95 in X10 (the client protocol carries text, so a byte stays
/// ASCII), 2015 in UTF-8 (two bytes). X10 mode (`?9`) reports no modifiers.
pub(crate) fn encode(
    report: MouseReport,
    column: u16,
    row: u16,
    wants: Wants,
    encoding: Encoding,
) -> String {
    let mut code = report.code;
    if wants == Wants::Press {
        code &= !MODIFIERS;
    }
    if encoding == Encoding::Sgr {
        let last = if report.release { 'm' } else { 'M' };
        return format!("\x1b[<{code};{column};{row}{last}");
    }
    if report.release {
        code = (code & !BUTTON) | NO_BUTTON;
    }
    let most = if encoding == Encoding::Utf8 { 2015 } else { 95 };
    let character = |n: u16| char::from_u32(u32::from(n.min(most) + 32)).unwrap_or(' ');
    format!(
        "\x1b[M{}{}{}",
        character(code),
        character(column),
        character(row)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_are_encoded_as_each_program_asked() {
        #[track_caller]
        fn check(
            (code, release): (u16, bool),
            (column, row): (u16, u16),
            wants: Wants,
            encoding: Encoding,
            expected: &str,
        ) {
            let report = MouseReport {
                code,
                column: 0,
                row: 0,
                release,
            };
            assert_eq!(encode(report, column, row, wants, encoding), expected);
        }
        use {Encoding as E, Wants as W};
        let left = (0, false);
        let release = (0, true);
        // SGR: the numbers as they are, a release by its last byte.
        check(left, (3, 2), W::PressRelease, E::Sgr, "\x1b[<0;3;2M");
        check(release, (3, 2), W::PressRelease, E::Sgr, "\x1b[<0;3;2m");
        check(
            (64, false),
            (300, 90),
            W::PressRelease,
            E::Sgr,
            "\x1b[<64;300;90M",
        );
        check(
            (32 + 2, false),
            (1, 1),
            W::ButtonMotion,
            E::Sgr,
            "\x1b[<34;1;1M",
        );
        // X10: 32 above each number; a release is button 3, modifiers kept.
        check(left, (3, 2), W::PressRelease, E::Default, "\x1b[M #\"");
        check(release, (3, 2), W::PressRelease, E::Default, "\x1b[M##\"");
        check(
            (16 + 1, true),
            (1, 1),
            W::PressRelease,
            E::Default,
            "\x1b[M3!!",
        );
        check(
            (65, false),
            (10, 5),
            W::PressRelease,
            E::Default,
            "\x1b[Ma*%",
        );
        // Capped where a byte would leave ASCII.
        check(
            left,
            (95, 200),
            W::PressRelease,
            E::Default,
            "\x1b[M \x7f\x7f",
        );
        // X10 mode (?9) reports no modifiers.
        check(
            (4 + 8 + 16, false),
            (1, 1),
            W::Press,
            E::Default,
            "\x1b[M !!",
        );
        check((4, false), (1, 1), W::PressRelease, E::Default, "\x1b[M$!!");
        // UTF-8: the same characters, beyond 95 as UTF-8, capped at 2015.
        check(left, (3, 2), W::PressRelease, E::Utf8, "\x1b[M #\"");
        check(
            left,
            (200, 3000),
            W::PressRelease,
            E::Utf8,
            "\x1b[M \u{e8}\u{7ff}",
        );
    }
}

#[cfg(test)]
#[path = "mouse_tests.rs"]
mod app_tests;
