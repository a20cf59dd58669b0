//! The text written to the person's terminal for one cell of a pane's emulator.
//!
//! The emulator (`vt100`) is the truth about where things are: it gives each character the
//! columns the program assumed (`wcwidth`), and a grapheme cluster it cannot hold in one
//! cell is spread over several (a ZWJ family is three wide cells, each emoji with its
//! joiner). The outer terminal must not measure that text again differently: written as is,
//! a cluster-aware terminal (tmux, most modern ones) joins those cells back into one
//! two-column glyph, its cursor falls behind ratatui's, and what ratatui then believes drawn
//! stays wrong on screen, even across a `clear`. So each cell is written as text that takes
//! exactly the emulator's columns everywhere and cannot join its neighbours.

use std::borrow::Cow;

use unicode_width::UnicodeWidthStr;

/// Shown for a cell whose text no terminal would draw in its own columns.
const PLACEHOLDER: char = '\u{FFFD}';

/// The text for a cell holding `contents` (`vt100::Cell::contents`, empty for a blank) over
/// `columns` columns (2 for a wide cell, 1 otherwise). Its width is exactly `columns`:
/// - joiners, variation selectors and tag characters are dropped: they make the outer
///   terminal merge this cell with the next or change its width (`❤️` is two columns to
///   the emulator, one to tmux), and the emulator has already decided both;
/// - a regional indicator is written as the letter it stands for (a flag as its region
///   code, `FR`): two of them side by side would join into one flag, and a lone one is one
///   column in some terminals and two in others;
/// - a skin-tone modifier in a cell of its own would join the emoji before it, so it is
///   written as a placeholder;
/// - text narrower than the cell is padded with blanks; text that cannot fit is a
///   placeholder.
pub fn cell_text(contents: &str, columns: usize) -> Cow<'_, str> {
    let Some(first) = contents.chars().next() else {
        return Cow::Owned(" ".repeat(columns));
    };
    let text: Cow<str> = if let Some(letter) = region_letter(first) {
        Cow::Owned(letter.to_string())
    } else if is_skin_tone(first) {
        Cow::Owned(PLACEHOLDER.to_string())
    } else if contents.chars().any(reshapes_neighbours) {
        Cow::Owned(
            contents
                .chars()
                .filter(|&c| !reshapes_neighbours(c))
                .collect(),
        )
    } else {
        Cow::Borrowed(contents)
    };
    let width = text.width();
    if width == columns {
        text
    } else if width == 0 || width > columns {
        Cow::Owned(format!("{PLACEHOLDER}{}", " ".repeat(columns - 1)))
    } else {
        Cow::Owned(format!("{text}{}", " ".repeat(columns - width)))
    }
}

/// Invisible characters that join cells or pick a presentation of another width.
fn reshapes_neighbours(c: char) -> bool {
    matches!(
        c,
        '\u{200D}' | '\u{FE0E}' | '\u{FE0F}' | '\u{E0000}'..='\u{E007F}'
    )
}

fn region_letter(c: char) -> Option<char> {
    let offset = u32::from(c).checked_sub(0x1F1E6)?;
    (offset < 26).then(|| char::from(b'A' + offset as u8))
}

fn is_skin_tone(c: char) -> bool {
    matches!(c, '\u{1F3FB}'..='\u{1F3FF}')
}

#[cfg(test)]
mod tests {
    //! Emulator tests: bytes through a real `vt100` parser, then `draw_screen` into a
    //! ratatui buffer, read back the way ratatui's diff writes it to the terminal.

    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;

    use crate::draw::draw_screen;

    const COLS: u16 = 12;

    /// What `draw_screen` writes for row `row` after `bytes`: each written symbol with its
    /// column, a symbol covering as many columns as its width (as ratatui's diff does), and
    /// the columns the emulator gave the cell there.
    fn written(bytes: &str, row: u16) -> Vec<(u16, String, u16)> {
        let mut parser = vt100::Parser::new(3.try_into().unwrap(), COLS.try_into().unwrap(), 0);
        parser.process(bytes.as_bytes());
        let area = Rect::new(0, 0, COLS, 3);
        let mut buffer = Buffer::empty(area);
        draw_screen(parser.screen(), area, &mut buffer);
        let mut symbols = Vec::new();
        let mut col = 0;
        while col < COLS {
            let symbol = buffer[(col, row)].symbol().to_owned();
            let width = unicode_width::UnicodeWidthStr::width(symbol.as_str()) as u16;
            let cell = parser.screen().cell(row, col).unwrap();
            let emulator = if cell.is_wide() { 2 } else { 1 };
            symbols.push((col, symbol, emulator));
            col += width.max(1);
        }
        symbols
    }

    /// The row's symbols up to the first blank, each with its column.
    #[track_caller]
    fn assert_row(bytes: &str, row: u16, expected: &[(u16, &str)]) {
        let symbols = written(bytes, row);
        for (col, symbol, emulator) in &symbols {
            let width = unicode_width::UnicodeWidthStr::width(symbol.as_str()) as u16;
            assert_eq!(
                width, *emulator,
                "{symbol:?} at column {col} is {width} wide; the emulator gave it {emulator}: {symbols:?}"
            );
        }
        let shown: Vec<(u16, &str)> = symbols
            .iter()
            .map(|(col, symbol, _)| (*col, symbol.as_str()))
            .take_while(|(_, symbol)| *symbol != " ")
            .collect();
        assert_eq!(shown, expected, "{bytes:?}");
    }

    #[test]
    fn a_zwj_family_is_its_emoji_side_by_side_without_joiners() {
        assert_row(
            "👨\u{200D}👩\u{200D}👧|",
            0,
            &[(0, "👨"), (2, "👩"), (4, "👧"), (6, "|")],
        );
    }

    #[test]
    fn a_flag_is_its_region_code() {
        assert_row("🇫🇷|", 0, &[(0, "F"), (1, "R"), (2, "|")]);
    }

    #[test]
    fn a_skin_tone_after_its_emoji_is_a_placeholder_in_its_own_columns() {
        assert_row("👍🏽|", 0, &[(0, "👍"), (2, "\u{FFFD} "), (4, "|")]);
    }

    #[test]
    fn an_emoji_presentation_selector_leaves_the_glyph_padded_to_the_emulator_s_width() {
        assert_row("❤\u{FE0F}|", 0, &[(0, "❤ "), (2, "|")]);
        assert_row("⌚\u{FE0E}|", 0, &[(0, "⌚"), (2, "|")]);
    }

    #[test]
    fn combining_marks_stay_with_their_letter() {
        assert_row(
            "e\u{301}t\u{301}|",
            0,
            &[(0, "e\u{301}"), (1, "t\u{301}"), (2, "|")],
        );
    }

    #[test]
    fn cjk_wide_characters_keep_two_columns() {
        assert_row("漢字|", 0, &[(0, "漢"), (2, "字"), (4, "|")]);
    }

    #[test]
    fn a_wide_character_that_does_not_fit_the_last_column_goes_to_the_next_row() {
        let line = "x".repeat(usize::from(COLS) - 1);
        let bytes = format!("{line}漢|");
        let first = written(&bytes, 0);
        assert_eq!(first.last().unwrap().1, " ", "{first:?}");
        assert_row(&bytes, 1, &[(0, "漢"), (2, "|")]);
        // Widened by its selector in the last column: moved down whole, not split.
        let bytes = format!("{line}❤\u{FE0F}|");
        let first = written(&bytes, 0);
        assert_eq!(first.last().unwrap().1, " ", "{first:?}");
        assert_row(&bytes, 1, &[(0, "❤ "), (2, "|")]);
    }

    #[test]
    fn a_wide_cell_clipped_by_the_area_is_a_placeholder_in_one_column() {
        let mut parser = vt100::Parser::new(1.try_into().unwrap(), 4.try_into().unwrap(), 0);
        parser.process("ab漢".as_bytes());
        let area = Rect::new(0, 0, 3, 1);
        let mut buffer = Buffer::empty(Rect::new(0, 0, 4, 1));
        draw_screen(parser.screen(), area, &mut buffer);
        // One column wide, so the terminal is not written past the area.
        assert_eq!(buffer[(2, 0)].symbol(), "\u{FFFD}");
    }
}
