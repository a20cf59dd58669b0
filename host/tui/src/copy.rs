//! Copy mode: scrollback mode (leader `[`) as a tmux user knows it. A cursor moves through
//! the pane's history, `/` searches all of it, `v` starts a selection and `y` puts the
//! selected text on the system clipboard through the person's terminal (OSC 52), wrapped
//! for tmux when the TUI runs inside it (docs/tui.md, "Copy mode").
//!
//! Positions are lines of the pane's history counted from the top of its live screen:
//! row 0 of the live screen is line 0, the line scrolled off above it is line -1. The row a
//! line is drawn at is its line plus the scrollback offset.

use base64::Engine;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier};

use crate::app::{App, Mode};
use crate::keys::Key;
use crate::notify;

/// Most bytes of text one copy puts on the clipboard: base64 makes a third more of it, and
/// terminals bound what one escape sequence may carry.
pub const MOST_COPIED: usize = 100 * 1024;

/// A place in the pane's history: a line (see the module's comment) and a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Point {
    pub line: i64,
    pub col: u16,
}

/// The match of the last search the cursor went to: its line, its first column and the
/// column after its last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    pub line: i64,
    pub start: u16,
    pub end: u16,
}

/// Copy mode's state; it starts afresh each time scrollback mode is entered.
#[derive(Debug, Clone, Default)]
pub struct CopyMode {
    pub cursor: Point,
    /// Where the selection started (`v`); it runs to the cursor.
    pub anchor: Option<Point>,
    /// What has been typed after `/`, until Enter or Esc (bytes: a character may come in
    /// several reads).
    typed: Option<Vec<u8>>,
    /// The last search run, for `n` and `N`.
    search: Option<String>,
    pub found: Option<Found>,
    /// Said on the notice row until the next key (`"x" not found`).
    message: Option<String>,
}

/// Which way a search goes from the cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Towards {
    Older,
    Newer,
}

/// What a key in copy mode comes to.
enum AfterKey {
    Stay,
    Leave,
    Copy(String),
}

/// One line of the pane's history as text, with the columns each character covers.
struct LineText {
    chars: Vec<char>,
    /// For each character, its cell's first column and the column after it.
    spans: Vec<(u16, u16)>,
    /// The line goes on in the next one (the program wrote past the last column).
    wrapped: bool,
}

impl LineText {
    /// Reads `line` from `screen`, scrolling the screen's view to it; `None` above the
    /// oldest line kept or below the screen.
    fn read(screen: &mut vt100::Screen, line: i64) -> Option<LineText> {
        let (rows, cols) = size(screen);
        let row = if line >= 0 {
            screen.set_scrollback(0);
            u16::try_from(line).ok().filter(|&row| row < rows)?
        } else {
            let up = usize::try_from(line.unsigned_abs()).ok()?;
            if up > screen.scrollback_len() {
                return None;
            }
            screen.set_scrollback(up);
            0
        };
        let mut text = LineText {
            chars: Vec::with_capacity(usize::from(cols)),
            spans: Vec::with_capacity(usize::from(cols)),
            wrapped: screen.row_wrapped(row),
        };
        for col in 0..cols {
            let Some(cell) = screen.cell(row, col) else {
                break;
            };
            if cell.is_wide_continuation() {
                continue;
            }
            let span = (col, if cell.is_wide() { col + 2 } else { col + 1 });
            let contents = cell.contents();
            if contents.is_empty() {
                text.chars.push(' ');
                text.spans.push(span);
            }
            for c in contents.chars() {
                text.chars.push(c);
                text.spans.push(span);
            }
        }
        Some(text)
    }

    /// The text of the cells from column `from` to column `to`, both included.
    fn between(&self, from: u16, to: u16) -> String {
        (self.chars.iter().zip(&self.spans))
            .filter(|(_, (start, _))| (from..=to).contains(start))
            .map(|(c, _)| c)
            .collect()
    }

    /// The column after the last character that is not a space (0 for a blank line).
    fn end(&self) -> u16 {
        (self.chars.iter().zip(&self.spans))
            .rev()
            .find(|(c, _)| **c != ' ')
            .map_or(0, |(_, (_, end))| *end)
    }

    /// Where `needle` occurs, as [`Found`]s on `line`, in order. Smart case: a needle
    /// without capitals matches either case.
    fn find(&self, needle: &[char], line: i64) -> Vec<Found> {
        let fold = !needle.iter().any(|c| c.is_uppercase());
        let lower = |c: char| c.to_lowercase().next().unwrap_or(c);
        let same = |a: char, b: char| a == b || (fold && lower(a) == lower(b));
        if needle.is_empty() || needle.len() > self.chars.len() {
            return Vec::new();
        }
        (0..=self.chars.len() - needle.len())
            .filter(|&at| {
                needle
                    .iter()
                    .enumerate()
                    .all(|(i, &n)| same(self.chars[at + i], n))
            })
            .map(|at| Found {
                line,
                start: self.spans[at].0,
                end: self.spans[at + needle.len() - 1].1,
            })
            .collect()
    }
}

fn size(screen: &vt100::Screen) -> (u16, u16) {
    let (rows, cols) = screen.size();
    (rows.get(), cols.get())
}

/// The oldest line kept.
fn top(screen: &vt100::Screen) -> i64 {
    -i64::try_from(screen.scrollback_len()).unwrap_or(i64::MAX)
}

impl CopyMode {
    /// Copy mode at the live screen, the cursor where the pane's is.
    fn at_cursor_of(screen: &vt100::Screen) -> CopyMode {
        let (row, col) = screen.cursor_position();
        CopyMode {
            cursor: Point {
                line: i64::from(row),
                col,
            },
            ..CopyMode::default()
        }
    }

    /// The selection's first and last cells, in order.
    pub fn selection(&self) -> Option<(Point, Point)> {
        let anchor = self.anchor?;
        Some((anchor.min(self.cursor), anchor.max(self.cursor)))
    }

    /// What the notice row says in copy mode.
    fn prompt(&self, offset: usize) -> String {
        if let Some(typed) = &self.typed {
            return format!("search up: {}", String::from_utf8_lossy(typed));
        }
        let what = if let Some(message) = &self.message {
            message.clone()
        } else if self.anchor.is_some() {
            "selecting · y copies · v stops · q leaves".to_owned()
        } else {
            "/ search · v select · q leaves".to_owned()
        };
        format!("scrollback: {offset} lines up · {what}")
    }

    /// One key; `view` is the scrollback offset, moved as the cursor needs, and `page` how
    /// far PageUp and PageDown go.
    fn on_key(
        &mut self,
        key: Key,
        screen: &mut vt100::Screen,
        view: &mut usize,
        page: usize,
    ) -> AfterKey {
        self.message = None;
        if let Some(typed) = &mut self.typed {
            match key {
                Key::Byte(b'\r') => {
                    let needle = String::from_utf8_lossy(typed).into_owned();
                    self.typed = None;
                    if !needle.is_empty() {
                        self.search = Some(needle);
                        self.search_from_cursor(screen, view);
                    }
                }
                Key::Escape => self.typed = None,
                Key::Byte(BACKSPACE | CTRL_H) => {
                    // Back to the start of the last character.
                    while let Some(byte) = typed.pop() {
                        if byte & 0xc0 != 0x80 {
                            break;
                        }
                    }
                }
                Key::Byte(CTRL_U) => typed.clear(),
                Key::Byte(byte) if byte >= b' ' => typed.push(byte),
                _ => {}
            }
            return AfterKey::Stay;
        }
        let (rows, cols) = size(screen);
        let last_col = cols - 1;
        let moved = self.cursor;
        let mut cursor = moved;
        match key {
            Key::Up | Key::Byte(b'k') => cursor.line -= 1,
            Key::Down | Key::Byte(b'j') => cursor.line += 1,
            Key::Left | Key::Byte(b'h') => cursor.col = cursor.col.saturating_sub(1),
            Key::Right | Key::Byte(b'l') => cursor.col = (cursor.col + 1).min(last_col),
            Key::Byte(b'0') => cursor.col = 0,
            Key::Byte(b'$') => {
                cursor.col = LineText::read(screen, cursor.line)
                    .map_or(0, |text| text.end().saturating_sub(1))
            }
            Key::Byte(b'w') => cursor = next_word(screen, cursor),
            Key::Byte(b'b') => cursor = previous_word(screen, cursor),
            Key::PageUp | Key::PageDown => {
                let before = *view;
                *view = if key == Key::PageUp {
                    view.saturating_add(page).min(screen.scrollback_len())
                } else {
                    view.saturating_sub(page)
                };
                // The cursor stays on its row of the screen.
                cursor.line +=
                    i64::try_from(before).unwrap_or(0) - i64::try_from(*view).unwrap_or(0);
            }
            Key::Home | Key::Byte(b'g') => {
                cursor = Point {
                    line: top(screen),
                    col: 0,
                }
            }
            Key::End | Key::Byte(b'G') => {
                cursor = Point {
                    line: i64::from(rows) - 1,
                    col: 0,
                }
            }
            // The keys that do not move the cursor by themselves.
            Key::Byte(b'/') => self.typed = Some(Vec::new()),
            Key::Byte(b'n') => self.search_on(screen, view, Towards::Older),
            Key::Byte(b'N') => self.search_on(screen, view, Towards::Newer),
            Key::Byte(b'v' | b' ') => {
                self.anchor = match self.anchor {
                    Some(_) => None,
                    None => Some(self.cursor),
                }
            }
            Key::Byte(b'y' | b'\r') => match self.selection() {
                Some((start, end)) => return AfterKey::Copy(selected_text(screen, start, end)),
                None => self.message = Some("nothing selected: v starts a selection".to_owned()),
            },
            Key::Byte(b'q') | Key::Escape => return AfterKey::Leave,
            _ => {}
        }
        if cursor != moved {
            self.cursor = Point {
                line: cursor.line.clamp(top(screen), i64::from(rows) - 1),
                col: cursor.col.min(last_col),
            };
            scroll_to(self.cursor.line, rows, view, false);
        }
        AfterKey::Stay
    }

    /// The search just typed: the nearest match above the cursor, else the nearest below it.
    fn search_from_cursor(&mut self, screen: &mut vt100::Screen, view: &mut usize) {
        let Some(needle) = self.search.clone() else {
            return;
        };
        let found = find(screen, &needle, self.cursor, Towards::Older)
            .or_else(|| find(screen, &needle, self.cursor, Towards::Newer));
        self.go_to(found, screen, view, format!("\"{needle}\" not found"));
    }

    /// `n` and `N`: the next match of the last search that way.
    fn search_on(&mut self, screen: &mut vt100::Screen, view: &mut usize, towards: Towards) {
        let Some(needle) = self.search.clone() else {
            self.message = Some("no search yet: / searches".to_owned());
            return;
        };
        let found = find(screen, &needle, self.cursor, towards);
        let way = match towards {
            Towards::Older => "older",
            Towards::Newer => "newer",
        };
        self.go_to(found, screen, view, format!("no {way} \"{needle}\""));
    }

    fn go_to(
        &mut self,
        found: Option<Found>,
        screen: &vt100::Screen,
        view: &mut usize,
        missing: String,
    ) {
        match found {
            Some(found) => {
                self.found = Some(found);
                self.cursor = Point {
                    line: found.line,
                    col: found.start,
                };
                scroll_to(found.line, size(screen).0, view, true);
            }
            None => self.message = Some(missing),
        }
    }
}

/// Moves `view` so that `line` is on the screen: by as little as it takes, or, for a jump
/// (a search), to put it in the middle when it is not in view already.
fn scroll_to(line: i64, rows: u16, view: &mut usize, jump: bool) {
    let rows = i64::from(rows);
    let offset = i64::try_from(*view).unwrap_or(i64::MAX);
    let row = line + offset;
    let wanted = if (0..rows).contains(&row) {
        offset
    } else if jump {
        rows / 2 - line
    } else if row < 0 {
        -line
    } else {
        rows - 1 - line
    };
    *view = usize::try_from(wanted).unwrap_or(0);
}

/// The nearest match of `needle` strictly before (older) or after (newer) `from`, searching
/// the whole history.
fn find(screen: &mut vt100::Screen, needle: &str, from: Point, towards: Towards) -> Option<Found> {
    let needle: Vec<char> = needle.chars().collect();
    let bottom = i64::from(size(screen).0) - 1;
    let on = |screen: &mut vt100::Screen, line: i64| {
        LineText::read(screen, line).map_or_else(Vec::new, |text| text.find(&needle, line))
    };
    match towards {
        Towards::Older => (top(screen)..=from.line).rev().find_map(|line| {
            on(screen, line)
                .into_iter()
                .rev()
                .find(|found| line < from.line || found.start < from.col)
        }),
        Towards::Newer => (from.line..=bottom).find_map(|line| {
            on(screen, line)
                .into_iter()
                .find(|found| line > from.line || found.start > from.col)
        }),
    }
}

/// `w`: the start of the next word (a run of characters that are not spaces), on this
/// line or the ones after it.
fn next_word(screen: &mut vt100::Screen, from: Point) -> Point {
    let bottom = i64::from(size(screen).0) - 1;
    for line in from.line..=bottom {
        let Some(text) = LineText::read(screen, line) else {
            break;
        };
        let mut after_space = line > from.line;
        for (c, (start, _)) in text.chars.iter().zip(&text.spans) {
            if line == from.line && *start <= from.col {
                after_space = *c == ' ';
                continue;
            }
            if *c == ' ' {
                after_space = true;
            } else if after_space {
                return Point { line, col: *start };
            }
        }
    }
    from
}

/// `b`: the start of this word, or of the one before it, on this line or the ones before.
fn previous_word(screen: &mut vt100::Screen, from: Point) -> Point {
    for line in (top(screen)..=from.line).rev() {
        let Some(text) = LineText::read(screen, line) else {
            break;
        };
        let mut starts = (text.chars.iter().zip(&text.spans))
            .enumerate()
            .filter(|&(i, (c, _))| *c != ' ' && (i == 0 || text.chars[i - 1] == ' '))
            .map(|(_, (_, (start, _)))| *start);
        let before = starts.rfind(|&start| line < from.line || start < from.col);
        if let Some(col) = before {
            return Point { line, col };
        }
    }
    from
}

/// The text from `start` to `end` (both included) as the emulator holds it: each line's
/// trailing spaces trimmed, lines joined with `\n`, a line the program wrote past the last
/// column joined to the next one as it was written.
fn selected_text(screen: &mut vt100::Screen, start: Point, end: Point) -> String {
    let last_col = size(screen).1 - 1;
    let mut text = String::new();
    for line in start.line..=end.line {
        let Some(line_text) = LineText::read(screen, line) else {
            continue;
        };
        let from = if line == start.line { start.col } else { 0 };
        let to = if line == end.line { end.col } else { last_col };
        let piece = line_text.between(from, to);
        if line_text.wrapped && line != end.line {
            text.push_str(&piece);
        } else {
            text.push_str(piece.trim_end_matches(' '));
            if line != end.line {
                text.push('\n');
            }
        }
    }
    text
}

/// How a copy reaches the clipboard from inside tmux.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TmuxClipboard {
    /// Not inside tmux: OSC 52 goes to the terminal as it is.
    Outside,
    /// tmux takes OSC 52 itself (`set-clipboard on`): it keeps a paste buffer and passes
    /// the sequence on to its own terminal.
    Takes,
    /// tmux lets the sequence out to its terminal wrapped (`allow-passthrough on`).
    PassesThrough,
    /// Neither: tmux drops the sequence. It is written anyway (a later `set-clipboard on`
    /// is read at the next copy) and the person is told what to set.
    Drops,
}

impl TmuxClipboard {
    /// Asked of tmux at each copy, so a setting changed meanwhile counts.
    pub fn current() -> TmuxClipboard {
        if std::env::var_os("TMUX").is_none_or(|value| value.is_empty()) {
            return TmuxClipboard::Outside;
        }
        let answer = notify::tmux_display("#{set-clipboard}\t#{allow-passthrough}");
        let answer = answer.as_deref().unwrap_or_default().trim_end();
        let (set_clipboard, passthrough) = answer.split_once('\t').unwrap_or((answer, ""));
        if set_clipboard == "on" {
            TmuxClipboard::Takes
        } else if !matches!(passthrough, "" | "0" | "off") {
            TmuxClipboard::PassesThrough
        } else {
            TmuxClipboard::Drops
        }
    }
}

/// The OSC 52 sequence that puts `text` on the system clipboard (`c`), as it must be
/// written through `tmux`.
pub fn osc52(text: &str, tmux: TmuxClipboard) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    let sequence = format!("\x1b]52;c;{encoded}\x07");
    match tmux {
        TmuxClipboard::PassesThrough => notify::tmux_passthrough(&sequence),
        TmuxClipboard::Outside | TmuxClipboard::Takes | TmuxClipboard::Drops => sequence,
    }
}

/// `text` cut to [`MOST_COPIED`] bytes at a character's start; whether it was cut.
fn bounded(mut text: String) -> (String, bool) {
    if text.len() <= MOST_COPIED {
        return (text, false);
    }
    let mut at = MOST_COPIED;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    text.truncate(at);
    (text, true)
}

const BACKSPACE: u8 = 0x7f;
const CTRL_H: u8 = 0x08;
const CTRL_U: u8 = 0x15;

impl App {
    /// Scrollback mode `offset` lines up (leader `[`: 0; a wheel notch: where it scrolled
    /// to), the cursor where the pane's is and nothing selected or searched from a visit
    /// before.
    pub(crate) fn enter_copy_mode(&mut self, offset: usize) {
        if let Some(pane) = self.panes.get(self.active) {
            self.copy = CopyMode::at_cursor_of(pane.screen.screen());
            self.mode = Mode::Scrollback(offset);
        }
    }

    /// A key in scrollback mode.
    pub(crate) fn on_copy_key(&mut self, key: Key) {
        let page = usize::from(self.rows_in_view().saturating_sub(1)).max(1);
        let Some(pane) = self.panes.get_mut(self.active) else {
            self.mode = Mode::Normal;
            return;
        };
        let screen = pane.screen.screen_mut();
        let mut view = screen.scrollback();
        let outcome = self.copy.on_key(key, screen, &mut view, page);
        screen.set_scrollback(view);
        self.mode = Mode::Scrollback(screen.scrollback());
        let copied = match outcome {
            AfterKey::Stay => return,
            AfterKey::Leave => None,
            AfterKey::Copy(text) => Some(text),
        };
        let active = self.active;
        self.select(active);
        if let Some(text) = copied {
            let lines = text.split('\n').count();
            let (text, cut) = bounded(text);
            let plural = if lines == 1 { "" } else { "s" };
            let cut = if cut {
                format!(" (cut to the first {} KiB)", MOST_COPIED / 1024)
            } else {
                String::new()
            };
            self.say(format!("copied {lines} line{plural}{cut}"));
            self.clipboard = Some(text);
        }
    }

    /// The notice row in scrollback mode.
    pub(crate) fn copy_prompt(&self, offset: usize) -> String {
        self.copy.prompt(offset)
    }

    /// Where the search prompt's text ends on the notice row, when it is open.
    pub(crate) fn copy_prompt_end(&self) -> Option<usize> {
        (self.copy.typed.as_ref())
            .map(|_| unicode_width::UnicodeWidthStr::width(self.copy.prompt(0).as_str()))
    }
}

/// Draws copy mode over the pane in view's screen at `area`: the selection reversed, the
/// match the cursor went to highlighted; returns where the cursor goes.
pub(crate) fn paint(app: &App, area: Rect, buffer: &mut Buffer) -> Option<Position> {
    let pane = app.active_pane()?;
    let screen = pane.screen.screen();
    let offset = i64::try_from(screen.scrollback()).ok()?;
    let last_col = size(screen).1.saturating_sub(1);
    let at = |point: Point| -> Option<Position> {
        let row = u16::try_from(point.line + offset).ok()?;
        (row < area.height && point.col < area.width)
            .then(|| Position::new(area.x + point.col, area.y + row))
    };
    let copy = &app.copy;
    if let Some((start, end)) = copy.selection() {
        for line in start.line..=end.line {
            let from = if line == start.line { start.col } else { 0 };
            let to = if line == end.line { end.col } else { last_col };
            for col in from..=to {
                if let Some(position) = at(Point { line, col }) {
                    buffer[position].modifier.toggle(Modifier::REVERSED);
                }
            }
        }
    }
    if let Some(found) = copy.found {
        for col in found.start..found.end {
            if let Some(position) = at(Point {
                line: found.line,
                col,
            }) {
                buffer[position].set_fg(Color::Black).set_bg(Color::Yellow);
            }
        }
    }
    at(copy.cursor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osc52_is_written_as_tmux_lets_it_out() {
        let plain = "\x1b]52;c;aMOpIHdvcmxkCg==\x07";
        assert_eq!(osc52("hé world\n", TmuxClipboard::Outside), plain);
        assert_eq!(osc52("hé world\n", TmuxClipboard::Takes), plain);
        assert_eq!(osc52("hé world\n", TmuxClipboard::Drops), plain);
        assert_eq!(
            osc52("hé world\n", TmuxClipboard::PassesThrough),
            "\x1bPtmux;\x1b\x1b]52;c;aMOpIHdvcmxkCg==\x07\x1b\\"
        );
    }

    #[test]
    fn a_long_copy_is_cut_at_a_character() {
        let (text, cut) = bounded("é".repeat(MOST_COPIED));
        assert!(cut);
        assert_eq!(text.len(), MOST_COPIED);
        let (text, cut) = bounded(format!("a{}", "é".repeat(MOST_COPIED / 2)));
        assert!(cut);
        assert_eq!(text.len(), MOST_COPIED - 1);
        assert_eq!(bounded("short".to_owned()), ("short".to_owned(), false));
    }
}
