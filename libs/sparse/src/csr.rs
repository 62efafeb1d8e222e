//! The compressed sparse row form of a matrix on the host: what a distributed `CsrMatrix`
//! is built from, and the sequential reference its kernels are checked against.

use crate::alloc;
use crate::error::SparseError;
use crate::triplets::Triplets;

/// The integer type of stored column indices, chosen when a matrix is built (like PETSc's
/// 32-bit indices: half the index traffic of SpMV when the columns fit).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum IndexWidth {
    /// 32-bit column indices (at most `i32::MAX` columns).
    I32,
    /// 64-bit column indices.
    I64,
}

impl IndexWidth {
    /// The narrowest width that holds column indices of a matrix with `cols` columns.
    pub fn smallest_for(cols: i64) -> Self {
        if cols <= i64::from(i32::MAX) {
            IndexWidth::I32
        } else {
            IndexWidth::I64
        }
    }
}

/// Column indices in the matrix's chosen width.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ColumnIndices {
    /// 32-bit indices.
    I32(Vec<i32>),
    /// 64-bit indices.
    I64(Vec<i64>),
}

impl ColumnIndices {
    /// The index at position `k`, widened.
    pub fn get(&self, k: usize) -> Option<i64> {
        match self {
            ColumnIndices::I32(v) => v.get(k).map(|&c| i64::from(c)),
            ColumnIndices::I64(v) => v.get(k).copied(),
        }
    }

    /// How many indices there are.
    pub fn len(&self) -> usize {
        match self {
            ColumnIndices::I32(v) => v.len(),
            ColumnIndices::I64(v) => v.len(),
        }
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The width they are stored in.
    pub fn width(&self) -> IndexWidth {
        match self {
            ColumnIndices::I32(_) => IndexWidth::I32,
            ColumnIndices::I64(_) => IndexWidth::I64,
        }
    }
}

/// A CSR matrix in host memory: row `r`'s entries are positions
/// `row_offsets[r]..row_offsets[r + 1]` of `columns` and `values`, columns strictly
/// increasing within a row (duplicates of the triplets summed).
#[derive(Clone, Debug, PartialEq)]
pub struct HostCsr {
    rows: i64,
    cols: i64,
    row_offsets: Vec<i64>,
    columns: ColumnIndices,
    values: Vec<f64>,
}

impl HostCsr {
    /// Compresses `t`, summing duplicate entries, with column indices of `width`.
    pub fn from_triplets(t: &Triplets, width: IndexWidth) -> Result<Self, SparseError> {
        if width == IndexWidth::I32 && t.cols() > i64::from(i32::MAX) {
            return Err(SparseError::BadShape {
                reason: format!("{} columns do not fit 32-bit column indices", t.cols()),
            });
        }
        let rows = usize::try_from(t.rows()).map_err(|_| SparseError::BadShape {
            reason: format!("{} rows", t.rows()),
        })?;
        // Counting sort by row, then sort each row by column and merge duplicates.
        let entries = t.entries().len();
        let mut counts = alloc::filled(rows + 1, 0usize, "the row counts")?;
        for &(r, _, _) in t.entries() {
            counts[r as usize + 1] += 1;
        }
        for r in 0..rows {
            counts[r + 1] += counts[r];
        }
        let mut next = alloc::collect(counts.iter().copied(), "the row positions")?;
        let mut by_row: Vec<(i64, f64)> = alloc::filled(entries, (0, 0.0), "the entries by row")?;
        for &(r, c, v) in t.entries() {
            by_row[next[r as usize]] = (c, v);
            next[r as usize] += 1;
        }
        let mut row_offsets = alloc::with_capacity(rows + 1, "the row offsets")?;
        let mut columns: Vec<i64> = alloc::with_capacity(entries, "the column indices")?;
        let mut values = alloc::with_capacity(entries, "the values")?;
        row_offsets.push(0);
        for r in 0..rows {
            let row = &mut by_row[counts[r]..counts[r + 1]];
            // Stable, so duplicates add up in the order they were given.
            row.sort_by_key(|&(c, _)| c);
            let start = columns.len();
            for &(c, v) in row.iter() {
                if columns.len() > start && columns.last() == Some(&c) {
                    if let Some(last) = values.last_mut() {
                        *last += v;
                    }
                } else {
                    columns.push(c);
                    values.push(v);
                }
            }
            row_offsets.push(columns.len() as i64);
        }
        let columns = match width {
            // In range: checked against the column count above.
            IndexWidth::I32 => ColumnIndices::I32(alloc::collect(
                columns.into_iter().map(|c| c as i32),
                "the 32-bit column indices",
            )?),
            IndexWidth::I64 => ColumnIndices::I64(columns),
        };
        Ok(HostCsr {
            rows: t.rows(),
            cols: t.cols(),
            row_offsets,
            columns,
            values,
        })
    }

    /// The matrix of CSR arrays given by a caller (a Python user, a file reader): row `r`'s
    /// entries are `values[row_offsets[r]..row_offsets[r + 1]]` in columns
    /// `columns[...]`, in any order, duplicates adding up. Every array is checked first
    /// (lengths, offsets starting at 0 and non-decreasing up to at most the entry count,
    /// columns inside the matrix), so that nothing indexes memory with an unchecked value;
    /// entries past `row_offsets[rows]` are ignored, as SciPy does.
    pub fn from_parts(
        rows: i64,
        cols: i64,
        row_offsets: &[i64],
        columns: &[i64],
        values: &[f64],
    ) -> Result<Self, SparseError> {
        let bad = |reason: String| Err(SparseError::BadCsr { reason });
        let mut t = Triplets::new(rows, cols)?;
        if usize::try_from(rows).ok().and_then(|r| r.checked_add(1)) != Some(row_offsets.len()) {
            return bad(format!(
                "index pointer size {} should be {} for {rows} rows",
                row_offsets.len(),
                i128::from(rows) + 1
            ));
        }
        if columns.len() != values.len() {
            return bad(format!(
                "indices ({}) and data ({}) should have the same size",
                columns.len(),
                values.len()
            ));
        }
        if row_offsets.first() != Some(&0) {
            return bad("index pointer should start with 0".into());
        }
        if let Some(r) = row_offsets.windows(2).position(|w| w[1] < w[0]) {
            return bad(format!(
                "indptr must be a non-decreasing sequence (indptr[{}] = {} > indptr[{}] = {})",
                r,
                row_offsets[r],
                r + 1,
                row_offsets[r + 1]
            ));
        }
        let nnz = row_offsets.last().copied().unwrap_or(0);
        if nnz as u64 > values.len() as u64 {
            return bad(format!(
                "last value of index pointer ({nnz}) should be at most the size of index and \
                 data arrays ({})",
                values.len()
            ));
        }
        // In 0..=values.len() (checked above).
        t.reserve(nnz as usize)?;
        for (row, w) in row_offsets.windows(2).enumerate() {
            // In 0..=values.len(): non-decreasing from 0 to at most the length (checked).
            for k in w[0] as usize..w[1] as usize {
                t.push(row as i64, columns[k], values[k])?;
            }
        }
        HostCsr::from_triplets(&t, IndexWidth::smallest_for(cols))
    }

    /// Number of rows.
    pub fn rows(&self) -> i64 {
        self.rows
    }

    /// Number of columns.
    pub fn cols(&self) -> i64 {
        self.cols
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// Where each row starts in `columns`/`values` (`rows + 1` offsets).
    pub fn row_offsets(&self) -> &[i64] {
        &self.row_offsets
    }

    /// The stored column indices.
    pub fn columns(&self) -> &ColumnIndices {
        &self.columns
    }

    /// The stored values.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// The diagonal (zeros where no entry is stored), `min(rows, cols)` long.
    pub fn diagonal(&self) -> Vec<f64> {
        let n = self.rows.min(self.cols).max(0) as usize;
        (0..n)
            .map(|r| {
                let (lo, hi) = (
                    self.row_offsets[r] as usize,
                    self.row_offsets[r + 1] as usize,
                );
                (lo..hi)
                    .find(|&k| self.columns.get(k) == Some(r as i64))
                    .map_or(0.0, |k| self.values[k])
            })
            .collect()
    }

    /// `A x`, sequentially, row by row in stored order: the reference SpMV kernels are
    /// checked against.
    pub fn matvec(&self, x: &[f64]) -> Result<Vec<f64>, SparseError> {
        if x.len() as i64 != self.cols {
            return Err(SparseError::BadShape {
                reason: format!(
                    "a vector of length {} times a {} x {} matrix",
                    x.len(),
                    self.rows,
                    self.cols
                ),
            });
        }
        Ok(self
            .row_offsets
            .windows(2)
            .map(|w| {
                // From +0.0 (an empty row is +0.0, as in the kernels; `Sum` starts at -0.0).
                (w[0] as usize..w[1] as usize).fold(0.0, |acc, k| {
                    acc + self.values[k] * x[self.columns.get(k).unwrap_or(0) as usize]
                })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dense(t: &Triplets) -> Vec<Vec<f64>> {
        let mut d = vec![vec![0.0; t.cols() as usize]; t.rows() as usize];
        for &(r, c, v) in t.entries() {
            d[r as usize][c as usize] += v;
        }
        d
    }

    #[test]
    fn duplicates_add_up_and_columns_sort() {
        let mut t = Triplets::new(3, 4).unwrap();
        for (r, c, v) in [
            (2, 3, 1.0),
            (0, 1, 2.0),
            (2, 0, 3.0),
            (0, 1, 0.5),
            (1, 2, -1.0),
        ] {
            t.push(r, c, v).unwrap();
        }
        let a = HostCsr::from_triplets(&t, IndexWidth::I32).unwrap();
        assert_eq!(a.row_offsets(), &[0, 1, 2, 4]);
        assert_eq!(a.columns(), &ColumnIndices::I32(vec![1, 2, 0, 3]));
        assert_eq!(a.values(), &[2.5, -1.0, 3.0, 1.0]);
        assert_eq!(a.diagonal(), vec![0.0, 0.0, 0.0]);
        assert!(
            a.matvec(&[1.0; 3]).is_err(),
            "length must match the columns"
        );
    }

    #[test]
    fn widths_are_checked() {
        assert_eq!(IndexWidth::smallest_for(1 << 31), IndexWidth::I64);
        assert_eq!(IndexWidth::smallest_for(5), IndexWidth::I32);
        let t = Triplets::new(1, 1 << 32).unwrap();
        assert!(matches!(
            HostCsr::from_triplets(&t, IndexWidth::I32),
            Err(SparseError::BadShape { .. })
        ));
        assert!(HostCsr::from_triplets(&t, IndexWidth::I64).is_ok());
    }

    #[test]
    fn parts_are_checked_before_use() {
        let ok = HostCsr::from_parts(2, 3, &[0, 2, 3], &[2, 0, 2], &[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(ok.row_offsets(), &[0, 2, 3]);
        assert_eq!(ok.columns(), &ColumnIndices::I32(vec![0, 2, 2]));
        assert_eq!(ok.values(), &[2.0, 1.0, 3.0]);
        /// Rows, columns, offsets, columns, values, and what the error must say.
        type Case<'a> = (i64, i64, &'a [i64], &'a [i64], &'a [f64], &'a str);
        let bad: [Case; 8] = [
            (2, 2, &[0, 2, 1], &[0, 1], &[1.0, 2.0], "non-decreasing"),
            (2, 2, &[0, 1], &[0], &[1.0], "size 2 should be 3"),
            (2, 2, &[1, 1, 1], &[0], &[1.0], "start with 0"),
            (1, 2, &[0, 3], &[0, 1], &[1.0, 2.0], "last value"),
            (1, 2, &[0, 1], &[0, 1], &[1.0], "same size"),
            (1, 2, &[0, 1], &[2], &[1.0], "outside a 1 x 2"),
            (1, 2, &[0, 1], &[-1], &[1.0], "outside a 1 x 2"),
            (-1, 2, &[0], &[], &[], "negative"),
        ];
        for (rows, cols, offsets, columns, values, want) in bad {
            let e = HostCsr::from_parts(rows, cols, offsets, columns, values).unwrap_err();
            assert!(e.to_string().contains(want), "{e} should say {want}");
        }
        assert!(HostCsr::from_parts(i64::MAX, 1, &[0], &[], &[]).is_err());
    }

    proptest! {
        /// Compression keeps the matrix: its product with any vector is the dense one's
        /// (entries are small integers, so sums are exact in any order).
        #[test]
        fn csr_products_equal_dense_products(
            rows in 0i64..7,
            cols in 1i64..7,
            raw in prop::collection::vec((0i64..100, 0i64..100, -4i32..5), 0..40),
            x in prop::collection::vec(-3i32..4, 7),
            wide in any::<bool>(),
        ) {
            let mut t = Triplets::new(rows, cols).unwrap();
            for (r, c, v) in raw {
                if rows > 0 {
                    t.push(r % rows, c % cols, f64::from(v)).unwrap();
                }
            }
            let width = if wide { IndexWidth::I64 } else { IndexWidth::I32 };
            let a = HostCsr::from_triplets(&t, width).unwrap();
            let x: Vec<f64> = x[..cols as usize].iter().map(|&v| f64::from(v)).collect();
            let want: Vec<f64> = dense(&t)
                .iter()
                .map(|row| row.iter().zip(&x).map(|(a, b)| a * b).sum())
                .collect();
            prop_assert_eq!(a.matvec(&x).unwrap(), want);
            prop_assert_eq!(a.columns().width(), width);
            prop_assert!(a.row_offsets().windows(2).all(|w| w[0] <= w[1]));
        }
    }
}
