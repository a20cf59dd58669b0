//! Rendering an [`App`]: one tab row, the panes in view (one, or the cells of a split or
//! grid, each under a header row), one notice row (SPEC §8: nothing else, so each pane's
//! screen is exactly what its PTY is told). Recovery appears only as a tab or header
//! marker and the chip on the notice row; it never takes a row of a pane's screen.

use std::time::Instant;

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};
use unicode_width::UnicodeWidthStr;

use crate::app::{App, Mode, View};
use crate::format::{self, Clock, TAB_SEPARATOR, TabRow, TabText, padded_tab, tab_label, truncate};
use crate::input::key_table;
use crate::layout::{Cell, outline};

pub fn draw(frame: &mut Frame, app: &App) {
    let area = frame.area();
    if area.height < 3 || area.width < 2 {
        return;
    }
    let tabs = Rect { height: 1, ..area };
    let panes = Rect {
        y: area.y + 1,
        height: area.height - 2,
        ..area
    };
    let notice = Rect {
        y: area.y + area.height - 1,
        height: 1,
        ..area
    };
    let view = app.view();
    if view.tabs {
        frame.render_widget(Line::from(tab_spans(app, &view, tabs.width)), tabs);
    }
    // The view is laid out for the size the app was last told; a terminal that shrank
    // since is clipped until its resize is read.
    let above_notice = Rect {
        height: area.height - 1,
        ..area
    };
    for &(index, cell) in &view.cells {
        let pane = &app.panes[index];
        let header = cell.header.intersection(above_notice);
        if !header.is_empty() {
            let line = header_line(app, index, header.width);
            frame.render_widget(line, header);
        }
        let screen_area = cell.screen.intersection(above_notice);
        let screen = pane.screen.screen();
        draw_screen(screen, screen_area, frame.buffer_mut());
        if index == app.active
            && let Mode::Scrollback(_) = app.mode
            && let Some(cursor) = crate::copy::paint(app, screen_area, frame.buffer_mut())
        {
            frame.set_cursor_position(cursor);
        }
        if index == app.active && app.mode == Mode::Normal && pane.alive && !screen.hide_cursor() {
            let (row, col) = screen.cursor_position();
            if row < screen_area.height && col < screen_area.width {
                frame.set_cursor_position(Position::new(screen_area.x + col, screen_area.y + row));
            }
        }
    }
    draw_rules(&view, above_notice, frame.buffer_mut());
    frame.render_widget(notice_line(app, notice.width), notice);
    if let Some(end) = app.copy_prompt_end() {
        let x = notice.x + u16::try_from(end).unwrap_or(u16::MAX).min(notice.width - 1);
        frame.set_cursor_position(Position::new(x, notice.y));
    }
    if app.mode == Mode::Help {
        draw_help(frame, app, panes);
    }
}

/// A cell's header: its pane's tab label (number, title, unread mark, recovery marker) on
/// a rule; the pane in view reversed, an exited one dim.
fn header_line(app: &App, index: usize, width: u16) -> Line<'static> {
    let pane = &app.panes[index];
    let marker = pane.marker();
    let label = tab_label(
        index + 1,
        pane.shown_title(),
        pane.unread,
        marker.as_deref(),
        usize::from(width).saturating_sub(3),
    );
    let label = truncate(&format!("─{}", padded_tab(&label)), usize::from(width));
    let rule = "─".repeat(usize::from(width).saturating_sub(label.width()));
    let mut style = Style::new();
    if index == app.active {
        style = style.add_modifier(Modifier::REVERSED | Modifier::BOLD);
    } else if !pane.alive {
        style = style.add_modifier(Modifier::DIM);
    }
    if pane.unread {
        style = style.fg(Color::Yellow);
    }
    Line::from(vec![
        Span::styled(label, style),
        Span::styled(rule, Style::new().add_modifier(Modifier::DIM)),
    ])
}

/// The one-column rules between cells side by side.
fn draw_rules(view: &View, within: Rect, buffer: &mut Buffer) {
    let cells: Vec<Cell> = view.cells.iter().map(|&(_, cell)| cell).collect();
    for pair in cells.windows(2) {
        let (left, right) = (outline(&pair[0]), outline(&pair[1]));
        if left.y != right.y || left.right() >= right.x {
            continue;
        }
        let x = left.right();
        for y in left.y..left.bottom() {
            if within.contains(Position::new(x, y)) {
                buffer[(x, y)]
                    .set_symbol(if y == left.y { "┬" } else { "│" })
                    .set_style(Style::new().add_modifier(Modifier::DIM));
            }
        }
    }
}

/// The tabs that fit `width` columns, the one in view always among them, with a dim count
/// of the tabs hidden at either end; the tabs of the other panes shown are underlined.
fn tab_spans(app: &App, view: &View, width: u16) -> Vec<Span<'static>> {
    let row = tab_row(app, width);
    let hidden = Style::new().add_modifier(Modifier::DIM);
    let mut spans = vec![Span::styled(row.before_text(), hidden)];
    for (index, label) in row.shown.clone().zip(&row.labels) {
        let pane = &app.panes[index];
        let mut style = Style::new();
        if index == app.active {
            style = style.add_modifier(Modifier::REVERSED | Modifier::BOLD);
        } else if !pane.alive {
            style = style.add_modifier(Modifier::DIM);
        }
        if index != app.active && view.cell_of(index).is_some() {
            style = style.add_modifier(Modifier::UNDERLINED);
        }
        if pane.unread {
            style = style.fg(Color::Yellow);
        }
        spans.push(Span::styled(padded_tab(label), style));
        spans.push(Span::raw(TAB_SEPARATOR));
    }
    spans.push(Span::styled(row.after_text(), hidden));
    spans
}

/// The tabs that fit `width` columns, as drawn (and clicked).
pub(crate) fn tab_row(app: &App, width: u16) -> TabRow {
    let tabs: Vec<TabText> = app
        .panes
        .iter()
        .map(|pane| TabText {
            title: pane.shown_title(),
            unread: pane.unread,
            marker: pane.marker(),
        })
        .collect();
    format::tab_row(&tabs, app.active, usize::from(width))
}

/// The notice row: what the keyboard is waiting for, else the pane's recovery chip and the
/// latest notice, else a hint to the help.
fn notice_line(app: &App, width: u16) -> Line<'static> {
    let width = usize::from(width);
    let prompt = match app.mode {
        Mode::Leader => Some(format!("{} … (? for help)", app.leader)),
        Mode::ConfirmClose(_) => {
            Some("close this pane? y closes, any other key keeps it".to_owned())
        }
        Mode::ConfirmCancel(_) => Some(
            "cancel this pane's recovery? Its plugin will not relaunch it; it stays exited. \
             y cancels, any other key keeps it"
                .to_owned(),
        ),
        Mode::Scrollback(offset) => Some(app.copy_prompt(offset)),
        Mode::Normal | Mode::Help => None,
    };
    if let Some(prompt) = prompt {
        return Line::from(Span::styled(
            truncate(&prompt, width),
            Style::new().add_modifier(Modifier::REVERSED),
        ));
    }
    let mut spans = Vec::new();
    let mut used = 0;
    if let Some(pane) = app.active_pane() {
        if !pane.alive {
            // Plainly exited unless its plugin is about to act on it (SPEC §8).
            let ended = pane.ended.as_deref().unwrap_or("exited");
            let state = if pane.pending_relaunch() {
                format!("{ended} · ")
            } else {
                format!("{ended} · {} x closes it · ", app.leader)
            };
            used += state.width();
            spans.push(Span::styled(
                state,
                Style::new().add_modifier(Modifier::DIM),
            ));
        }
        if let Some(recovery) = &pane.recovery {
            // Drawn against the wall clock: the run loop redraws every second while a
            // chip counts down.
            let chip = truncate(&recovery.chip(&Clock::local()), width.saturating_sub(used));
            used += chip.width();
            spans.push(Span::styled(
                chip,
                Style::new().fg(Color::Black).bg(Color::Yellow),
            ));
        }
    }
    match app.notice(Instant::now()) {
        Some(notice) => {
            let gap = if used > 0 { "  " } else { "" };
            let text = truncate(&format!("{gap}{notice}"), width.saturating_sub(used));
            spans.push(Span::styled(
                text,
                Style::new().add_modifier(Modifier::BOLD),
            ));
        }
        None if used == 0 => {
            let hint = format!("{} ? for help", app.leader);
            spans.push(Span::styled(
                truncate(&hint, width),
                Style::new().add_modifier(Modifier::DIM),
            ));
        }
        None => {}
    }
    Line::from(spans)
}

/// The emulator's screen, cell by cell, at the scrollback position it is at. Each cell is
/// written over exactly the columns the emulator gave it ([`crate::cell_text`]); a wide cell's
/// second column is covered by its symbol, and one cut by the area's edge gets one column.
pub(crate) fn draw_screen(screen: &vt100::Screen, area: Rect, buffer: &mut Buffer) {
    for row in 0..area.height {
        for col in 0..area.width {
            let Some(cell) = screen.cell(row, col) else {
                continue;
            };
            if cell.is_wide_continuation() {
                continue;
            }
            let columns = if cell.is_wide() && col + 1 < area.width {
                2
            } else {
                1
            };
            let target = &mut buffer[(area.x + col, area.y + row)];
            target.set_symbol(&crate::cell_text::cell_text(cell.contents(), columns));
            target.set_style(cell_style(cell));
        }
    }
}

fn cell_style(cell: &vt100::Cell) -> Style {
    let mut style = Style::new()
        .fg(color(cell.fgcolor()))
        .bg(color(cell.bgcolor()));
    let mut modifiers = Modifier::empty();
    for (on, modifier) in [
        (cell.bold(), Modifier::BOLD),
        (cell.dim(), Modifier::DIM),
        (cell.italic(), Modifier::ITALIC),
        (cell.underline(), Modifier::UNDERLINED),
        (cell.inverse(), Modifier::REVERSED),
    ] {
        if on {
            modifiers |= modifier;
        }
    }
    style = style.add_modifier(modifiers);
    style
}

fn color(color: vt100::Color) -> Color {
    match color {
        vt100::Color::Default => Color::Reset,
        vt100::Color::Idx(index) => Color::Indexed(index),
        vt100::Color::Rgb(r, g, b) => Color::Rgb(r, g, b),
    }
}

fn draw_help(frame: &mut Frame, app: &App, panes: Rect) {
    let table = key_table(app.leader, app.role);
    let key_width = table.iter().map(|(key, _)| key.width()).max().unwrap_or(0);
    let lines: Vec<Line> = table
        .iter()
        .map(|(key, what)| Line::from(format!(" {key:<key_width$}  {what} ")))
        .collect();
    let width = lines.iter().map(Line::width).max().unwrap_or(0) as u16 + 2;
    let height = lines.len() as u16 + 2;
    let area = Rect {
        x: panes.x + panes.width.saturating_sub(width) / 2,
        y: panes.y + panes.height.saturating_sub(height) / 2,
        width: width.min(panes.width),
        height: height.min(panes.height),
    };
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" nightcrow keys · any key closes ")),
        area,
    );
}

/// What the pane in view expects of the person's terminal, so its keys arrive as the
/// program asked (arrow keys in application mode, bracketed paste, mouse reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InputModes {
    application_cursor: bool,
    application_keypad: bool,
    bracketed_paste: bool,
    mouse: vt100::MouseProtocolMode,
    mouse_encoding: vt100::MouseProtocolEncoding,
}

impl InputModes {
    /// The pane in view's modes while the keyboard is its own. With the TUI reading the
    /// mouse, the mouse modes are the TUI's whatever the mode: SGR reports of presses,
    /// releases and drags, and of every motion only while the pane in view asks for it.
    pub fn of(app: &App) -> InputModes {
        let mirrored = match app.active_pane() {
            Some(pane) if app.mode == Mode::Normal && pane.alive => {
                let screen = pane.screen.screen();
                InputModes {
                    application_cursor: screen.application_cursor(),
                    application_keypad: screen.application_keypad(),
                    bracketed_paste: screen.bracketed_paste(),
                    mouse: screen.mouse_protocol_mode(),
                    mouse_encoding: screen.mouse_protocol_encoding(),
                }
            }
            _ => InputModes::default(),
        };
        if !app.mouse.on {
            return mirrored;
        }
        InputModes {
            mouse: if mirrored.mouse == vt100::MouseProtocolMode::AnyMotion {
                vt100::MouseProtocolMode::AnyMotion
            } else {
                vt100::MouseProtocolMode::ButtonMotion
            },
            mouse_encoding: vt100::MouseProtocolEncoding::Sgr,
            ..mirrored
        }
    }

    /// The escape sequences that take a terminal from `self` to `next`.
    pub fn switch_to(self, next: InputModes) -> String {
        let mut out = String::new();
        let flag = |out: &mut String, mode: &str, on: bool| {
            out.push_str(&format!("\x1b[?{mode}{}", if on { 'h' } else { 'l' }))
        };
        if self.application_cursor != next.application_cursor {
            flag(&mut out, "1", next.application_cursor);
        }
        if self.application_keypad != next.application_keypad {
            out.push_str(if next.application_keypad {
                "\x1b="
            } else {
                "\x1b>"
            });
        }
        if self.bracketed_paste != next.bracketed_paste {
            flag(&mut out, "2004", next.bracketed_paste);
        }
        if self.mouse != next.mouse {
            if let Some(mode) = mouse_mode(self.mouse) {
                flag(&mut out, mode, false);
            }
            if let Some(mode) = mouse_mode(next.mouse) {
                flag(&mut out, mode, true);
            }
        }
        if self.mouse_encoding != next.mouse_encoding {
            if let Some(mode) = mouse_encoding(self.mouse_encoding) {
                flag(&mut out, mode, false);
            }
            if let Some(mode) = mouse_encoding(next.mouse_encoding) {
                flag(&mut out, mode, true);
            }
        }
        out
    }
}

fn mouse_mode(mode: vt100::MouseProtocolMode) -> Option<&'static str> {
    use vt100::MouseProtocolMode as M;
    match mode {
        M::None => None,
        M::Press => Some("9"),
        M::PressRelease => Some("1000"),
        M::ButtonMotion => Some("1002"),
        M::AnyMotion => Some("1003"),
    }
}

fn mouse_encoding(encoding: vt100::MouseProtocolEncoding) -> Option<&'static str> {
    use vt100::MouseProtocolEncoding as E;
    match encoding {
        E::Default => None,
        E::Utf8 => Some("1005"),
        E::Sgr => Some("1006"),
    }
}
