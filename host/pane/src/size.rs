//! Pane sizes, checked against the bounds of SPEC §5.1 when they are made.

use crate::PaneError;

/// Most rows a pane may have (SPEC §5.1).
pub const MAX_ROWS: u16 = 500;
/// Most columns a pane may have (SPEC §5.1).
pub const MAX_COLS: u16 = 1100;

/// A terminal size within 1–500 rows × 1–1100 columns; the only way to size a pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaneSize {
    rows: u16,
    cols: u16,
}

impl PaneSize {
    pub fn new(rows: u16, cols: u16) -> Result<PaneSize, PaneError> {
        if !(1..=MAX_ROWS).contains(&rows) {
            return Err(PaneError::RowsOutOfRange(rows));
        }
        if !(1..=MAX_COLS).contains(&cols) {
            return Err(PaneError::ColsOutOfRange(cols));
        }
        Ok(PaneSize { rows, cols })
    }

    pub fn rows(self) -> u16 {
        self.rows
    }

    pub fn cols(self) -> u16 {
        self.cols
    }

    pub(crate) fn to_pty(self) -> portable_pty::PtySize {
        portable_pty::PtySize {
            rows: self.rows,
            cols: self.cols,
            pixel_width: 0,
            pixel_height: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_inclusive_and_errors_name_the_bound() {
        assert!(PaneSize::new(1, 1).is_ok());
        assert!(PaneSize::new(MAX_ROWS, MAX_COLS).is_ok());
        for (rows, cols, message) in [
            (0, 80, "pane rows must be 1..=500, got 0"),
            (501, 80, "pane rows must be 1..=500, got 501"),
            (24, 0, "pane cols must be 1..=1100, got 0"),
            (24, 1101, "pane cols must be 1..=1100, got 1101"),
        ] {
            let error = PaneSize::new(rows, cols).unwrap_err();
            assert_eq!(error.to_string(), message);
        }
    }
}
