//! Where panes go on the screen: the split (up to [`SPLIT_MOST`] panes side by side under
//! the tab row), the grid (every pane, up to [`GRID_MOST`], on the whole screen but the
//! notice row) and the single pane in view. Pure geometry: the same cells size the PTYs
//! and are drawn, so a pane is told exactly the size it is shown at.

use ratatui::layout::Rect;

/// Most panes the split shows.
pub const SPLIT_MOST: usize = 4;
/// Most panes the grid shows (the hub runs at most this many, docs/tui.md).
pub const GRID_MOST: usize = 8;
/// Columns per row of a pane that looks balanced: terminal cells are about twice as tall
/// as they are wide, and text wants width, so cells are laid out towards this shape.
const BALANCED_SHAPE: f64 = 2.5;

/// One pane's place when several are shown: a header row (its title and recovery marker,
/// SPEC §8 "pane borders") above its screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    pub header: Rect,
    pub screen: Rect,
}

/// `count` cells over `area`, in rows laid out to suit the area's shape; `None` when the
/// area is too small for that many (every screen needs 2×2).
pub fn arrange(count: usize, area: Rect) -> Option<Vec<Cell>> {
    (1..=count)
        .filter_map(|rows| cells_in_rows(count, rows, area))
        .min_by(|a, b| imbalance(a).total_cmp(&imbalance(b)))
}

/// How far the cells are from [`BALANCED_SHAPE`], on average, in log scale so that twice
/// too wide weighs as much as twice too tall.
fn imbalance(cells: &[Cell]) -> f64 {
    let total: f64 = cells
        .iter()
        .map(|cell| {
            let shape = f64::from(cell.screen.width) / f64::from(cell.screen.height);
            (shape / BALANCED_SHAPE).ln().abs()
        })
        .sum();
    total / cells.len() as f64
}

/// `count` cells in `rows` rows of equal height, the later rows taking one more cell when
/// they do not divide evenly; cells in a row are divided by a one-column rule.
fn cells_in_rows(count: usize, rows: usize, area: Rect) -> Option<Vec<Cell>> {
    let heights = shares(area.height, rows);
    let mut cells = Vec::with_capacity(count);
    let mut y = area.y;
    for (row, height) in heights.into_iter().enumerate() {
        let in_row = count / rows + usize::from(row >= rows - count % rows);
        let rules = u16::try_from(in_row - 1).ok()?;
        let widths = shares(area.width.checked_sub(rules)?, in_row);
        let mut x = area.x;
        for width in widths {
            if width < 2 || height < 3 {
                return None;
            }
            cells.push(Cell {
                header: Rect::new(x, y, width, 1),
                screen: Rect::new(x, y + 1, width, height - 1),
            });
            x += width + 1;
        }
        y += height;
    }
    Some(cells)
}

/// `total` split into `parts` sizes that differ by at most one, the larger ones last.
fn shares(total: u16, parts: usize) -> Vec<u16> {
    let parts16 = u16::try_from(parts).unwrap_or(u16::MAX).max(1);
    let base = total / parts16;
    let larger_from = parts - usize::from(total % parts16);
    (0..parts)
        .map(|index| base + u16::from(index >= larger_from))
        .collect()
}

/// A way to move between cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Left,
    Right,
    Up,
    Down,
}

/// The cell next to `from` in `direction`: the nearest one wholly on that side, the one
/// most in line with `from` when several are as near.
pub fn neighbour(cells: &[Cell], from: usize, direction: Direction) -> Option<usize> {
    let here = outline(cells.get(from)?);
    let centre = |rect: Rect| {
        (
            i32::from(rect.x) * 2 + i32::from(rect.width),
            i32::from(rect.y) * 2 + i32::from(rect.height),
        )
    };
    let (cx, cy) = centre(here);
    cells
        .iter()
        .enumerate()
        .filter(|&(index, _)| index != from)
        .filter_map(|(index, cell)| {
            let there = outline(cell);
            let (tx, ty) = centre(there);
            let (gap, offset) = match direction {
                Direction::Left => (i32::from(here.x) - i32::from(there.right()), ty - cy),
                Direction::Right => (i32::from(there.x) - i32::from(here.right()), ty - cy),
                Direction::Up => (i32::from(here.y) - i32::from(there.bottom()), tx - cx),
                Direction::Down => (i32::from(there.y) - i32::from(here.bottom()), tx - cx),
            };
            (gap >= 0).then_some((gap, offset.abs(), index))
        })
        .min()
        .map(|(_, _, index)| index)
}

/// The whole of a cell, header and screen.
pub fn outline(cell: &Cell) -> Rect {
    cell.header.union(cell.screen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(cells: &[Cell]) -> Vec<(u16, u16, u16, u16)> {
        cells
            .iter()
            .map(|cell| {
                let s = cell.screen;
                (s.x, s.y, s.width, s.height)
            })
            .collect()
    }

    #[test]
    fn cells_follow_the_shape_of_the_screen() {
        let wide = Rect::new(0, 1, 200, 48);
        // Two side by side in a wide terminal, each with a header row, a rule between.
        assert_eq!(
            sizes(&arrange(2, wide).unwrap()),
            [(0, 2, 99, 47), (100, 2, 100, 47)]
        );
        // Four make a 2×2 grid.
        assert_eq!(
            sizes(&arrange(4, wide).unwrap()),
            [
                (0, 2, 99, 23),
                (100, 2, 100, 23),
                (0, 26, 99, 23),
                (100, 26, 100, 23)
            ]
        );
        // Three in 80×22: one across the top, two below.
        assert_eq!(
            sizes(&arrange(3, Rect::new(0, 1, 80, 22)).unwrap()),
            [(0, 2, 80, 10), (0, 13, 39, 10), (40, 13, 40, 10)]
        );
        // A tall, narrow terminal stacks them.
        assert_eq!(
            sizes(&arrange(2, Rect::new(0, 1, 60, 60)).unwrap()),
            [(0, 2, 60, 29), (0, 32, 60, 29)]
        );
        // Eight in a full 200×49 grid: four across, two down.
        let grid = arrange(8, Rect::new(0, 0, 200, 49)).unwrap();
        assert_eq!(grid.len(), 8);
        assert!(grid.iter().all(|cell| cell.screen.width >= 49));
        assert_eq!(grid[4].header.y, 24);
    }

    #[test]
    fn cells_cover_the_area_without_overlap() {
        for (width, height) in [(80, 22), (200, 48), (61, 17), (7, 9), (300, 90)] {
            let area = Rect::new(0, 1, width, height);
            for count in 1..=GRID_MOST {
                let Some(cells) = arrange(count, area) else {
                    continue;
                };
                assert_eq!(cells.len(), count);
                let covered: u32 = cells.iter().map(|cell| outline(cell).area()).sum();
                // The rules between cells of a row: one column as tall as the row.
                let rules: u32 = cells
                    .windows(2)
                    .filter(|pair| pair[0].header.y == pair[1].header.y)
                    .map(|pair| u32::from(outline(&pair[0]).height))
                    .sum();
                assert_eq!(covered + rules, area.area(), "{count} in {area:?}");
                for (i, a) in cells.iter().enumerate() {
                    assert!(area.contains(a.screen.as_position()));
                    for b in &cells[i + 1..] {
                        assert!(!outline(a).intersects(outline(b)), "{count} in {area:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn too_small_an_area_has_no_arrangement() {
        assert_eq!(arrange(4, Rect::new(0, 0, 3, 3)), None);
        assert!(arrange(1, Rect::new(0, 0, 2, 3)).is_some());
    }

    #[test]
    fn neighbours_are_the_nearest_cells_on_that_side() {
        let cells = arrange(4, Rect::new(0, 1, 200, 48)).unwrap();
        assert_eq!(neighbour(&cells, 0, Direction::Right), Some(1));
        assert_eq!(neighbour(&cells, 0, Direction::Down), Some(2));
        assert_eq!(neighbour(&cells, 3, Direction::Up), Some(1));
        assert_eq!(neighbour(&cells, 3, Direction::Left), Some(2));
        assert_eq!(neighbour(&cells, 0, Direction::Left), None);
        let three = arrange(3, Rect::new(0, 1, 80, 22)).unwrap();
        // From the wide cell on top, down goes to the cell most in line with its centre.
        assert_eq!(neighbour(&three, 0, Direction::Down), Some(2));
        assert_eq!(neighbour(&three, 2, Direction::Up), Some(0));
    }
}
