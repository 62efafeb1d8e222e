//! Matrices as coordinate triplets: what files and generators produce before compression.

use crate::error::SparseError;

/// A sparse matrix as `(row, column, value)` entries, in any order, duplicates allowed (they
/// add up when compressed).
#[derive(Clone, Debug, PartialEq)]
pub struct Triplets {
    rows: i64,
    cols: i64,
    entries: Vec<(i64, i64, f64)>,
}

impl Triplets {
    /// An empty `rows x cols` matrix.
    pub fn new(rows: i64, cols: i64) -> Result<Self, SparseError> {
        if rows < 0 || cols < 0 {
            return Err(SparseError::BadShape {
                reason: format!("{rows} x {cols} has a negative extent"),
            });
        }
        Ok(Triplets {
            rows,
            cols,
            entries: Vec::new(),
        })
    }

    /// Adds `value` at `(row, col)` (0-based).
    pub fn push(&mut self, row: i64, col: i64, value: f64) -> Result<(), SparseError> {
        if !(0..self.rows).contains(&row) || !(0..self.cols).contains(&col) {
            return Err(SparseError::EntryOutOfBounds {
                row,
                col,
                rows: self.rows,
                cols: self.cols,
            });
        }
        self.entries.push((row, col, value));
        Ok(())
    }

    /// Makes room for `additional` more entries (a refused allocation is an error, not an
    /// abort).
    pub fn reserve(&mut self, additional: usize) -> Result<(), SparseError> {
        self.entries
            .try_reserve(additional)
            .map_err(|_| SparseError::OutOfMemory {
                what: format!("{additional} matrix entries"),
                bytes: additional.saturating_mul(std::mem::size_of::<(i64, i64, f64)>()),
            })
    }

    /// Number of rows.
    pub fn rows(&self) -> i64 {
        self.rows
    }

    /// Number of columns.
    pub fn cols(&self) -> i64 {
        self.cols
    }

    /// The entries as pushed.
    pub fn entries(&self) -> &[(i64, i64, f64)] {
        &self.entries
    }
}
