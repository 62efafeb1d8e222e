//! Distributed CSR matrices and SpMV as index tasks.
//!
//! A [`CsrMatrix`] keeps three stores: where each row ends in the entry arrays (a vector of
//! the row count, tiled like the rows; a row starts where the one before it in its tile ends,
//! the tile's first row at 0), and the entries' column indices and values (`f64`). The
//! indices (row ends and columns) are `i32` when every tile's entry count and the column
//! count fit, as PETSc's are, else `i64`: SpMV reads every index once per product, so this
//! halves their traffic. `y = A x` is one index task over row tiles, one per processor: `y`
//! and the row ends through the same blocked tiling; the entries and
//! `x` through image partitions computed once from the sparsity pattern when the matrix is
//! built, as distributed solvers partition them: row tile `c` reads the entries of its rows
//! (one contiguous range) and the elements of `x` between the smallest and the largest
//! column those entries name (its own part of `x` plus the halo it shares with its
//! neighbours). The stored indices are local to the tile, as in a distributed solver's local
//! matrix: row ends count from the tile's first entry, columns from the first column
//! of its `x` box, so a point indexes its sub-stores directly. Partitions still compare in
//! O(1) (images are hash-consed when built), and a distributed backend moves only the halos
//! of `x` per product instead of all of it.

use std::sync::{Arc, OnceLock};

use diffuse_array::{Array, ArrayContext};
use diffuse_ir::{
    DType, IndexTask, KernelError, Partition, PointTask, Privilege, ReadView, Rect, Store,
    TaskKind, Tuple,
};

use crate::alloc;
use crate::csr::{ColumnIndices, HostCsr, IndexWidth};
use crate::error::SparseError;
use crate::mlir::SpmvGenerator;

/// A CSR matrix distributed as stores of an array context.
#[derive(Clone)]
pub struct CsrMatrix {
    cx: ArrayContext,
    rows: i64,
    cols: i64,
    width: IndexWidth,
    ends: Store,
    columns: Store,
    values: Store,
    tiles: RowTiles,
}

/// How the products of a matrix are launched: one point per row tile, and the image
/// partitions of the entries and of `x` for those tiles.
#[derive(Clone)]
struct RowTiles {
    /// The launch domain (`[tiles]`; empty without rows).
    launch: Tuple,
    /// Row tile `c` reads the entries of its rows.
    entries: Partition,
    /// Row tile `c` reads the elements of `x` its entries' columns name.
    x: Partition,
}

impl std::fmt::Debug for CsrMatrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CsrMatrix")
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .field("width", &self.width)
            .finish()
    }
}

impl CsrMatrix {
    /// Uploads `host` into stores of `cx`, its indices made local to the row tiles of the
    /// context's processors (see the module documentation).
    pub fn from_host(cx: &ArrayContext, host: &HostCsr) -> Result<Self, SparseError> {
        let ir = cx.ir();
        let offsets = host.row_offsets();
        let rows = host.rows();
        // The row tiles the array library gives a vector of `rows` elements (one per
        // processor unless the vector is small), so SpMV fuses with vector operations; each
        // non-empty (a tiling may not start past the store's end).
        let points = if rows > 0 {
            cx.partitioner().launch_for(Tuple::shape(&[rows])?)[0]
        } else {
            1
        };
        let tile = ((rows + points - 1) / points).max(1);
        let tiles = (rows + tile - 1) / tile;
        let tile_of = |row: i64| row / tile;
        let mut entry_boxes = Vec::with_capacity(tiles as usize);
        let mut x_boxes = Vec::with_capacity(tiles as usize);
        let columns_of = |k: usize| match host.columns() {
            ColumnIndices::I32(c) => i64::from(c[k]),
            ColumnIndices::I64(c) => c[k],
        };
        for c in 0..tiles {
            let (r0, r1) = (c * tile, ((c + 1) * tile).min(rows));
            let (e0, e1) = (offsets[r0 as usize], offsets[r1 as usize]);
            entry_boxes.push(span(e0, e1));
            let (lo, hi) = (e0 as usize..e1 as usize)
                .map(columns_of)
                .fold((i64::MAX, i64::MIN), |(lo, hi), col| {
                    (lo.min(col), hi.max(col))
                });
            x_boxes.push(if lo > hi {
                span(0, 0)
            } else {
                span(lo, hi + 1)
            });
        }
        let launch = Tuple::shape(&[tiles])?;
        let tiles_info = RowTiles {
            launch,
            entries: Partition::image(launch, entry_boxes.clone())?,
            x: Partition::image(launch, x_boxes.clone())?,
        };
        // Row ends and columns local to their tile (module documentation), in the narrowest
        // width that holds the column count and every tile's entry count.
        let width = index_width(
            host.columns().width(),
            entry_boxes.iter().map(|b| b.hi[0] - b.lo[0]),
        );
        let first_entry = |row: i64| entry_boxes[tile_of(row) as usize].lo[0];
        let rows_len = offsets.len().saturating_sub(1);
        let ends = (0..rows_len).map(|r| offsets[r + 1] - first_entry(r as i64));
        let ends = indices(ir, rows, width, ends, "the row ends")?;
        // The tile of every entry, for its local column.
        let mut first_column = alloc::filled(host.nnz(), 0i64, "the entries' first columns")?;
        for c in 0..tiles as usize {
            let (e0, e1) = (entry_boxes[c].lo[0] as usize, entry_boxes[c].hi[0] as usize);
            first_column[e0..e1].fill(x_boxes[c].lo[0]);
        }
        let nnz = host.nnz() as i64;
        let local = (0..host.nnz()).map(|k| columns_of(k) - first_column[k]);
        let columns = indices(ir, nnz, width, local, "the local column indices")?;
        let values = ir.store_from_vec(
            &[nnz],
            alloc::collect(host.values().iter().copied(), "the values")?,
        )?;
        Ok(CsrMatrix {
            cx: cx.clone(),
            rows,
            cols: host.cols(),
            width,
            ends,
            columns,
            values,
            tiles: tiles_info,
        })
    }

    /// `(rows, columns)`.
    pub fn shape(&self) -> (i64, i64) {
        (self.rows, self.cols)
    }

    /// `A x` for a 1-d `f64` array `x` of length `columns` on the same context, as
    /// one index task over row tiles (nothing waits: the result is a new array).
    pub fn spmv(&self, x: &Array) -> Result<Array, SparseError> {
        if x.dtype() != DType::F64 || x.ndim() != 1 || x.shape()[0] != self.cols {
            return Err(SparseError::BadShape {
                reason: format!(
                    "a {} x {} matrix times a {} array of shape {}",
                    self.rows,
                    self.cols,
                    x.dtype(),
                    x.shape()
                ),
            });
        }
        self.cx.check_same(x.context(), "spmv")?;
        // The kernel reads `x` as a whole store: a view of part of one (a slice) is copied
        // into a store of its own first.
        let whole;
        let x = if x.view().is_whole_store() {
            x
        } else {
            whole = x.copy()?;
            &whole
        };
        let ir = self.cx.ir();
        let y = ir.create_store(&[self.rows], DType::F64)?;
        if self.rows > 0 {
            let launch = self.tiles.launch;
            let by_rows = |s: &Store| s.view().blocked(launch).map_err(SparseError::from);
            let task = IndexTask::new(&spmv_kind(self.width)?, launch)
                .arg(&y, by_rows(&y)?, Privilege::Write)
                .arg(&self.ends, by_rows(&self.ends)?, Privilege::Read)
                .arg(&self.columns, self.tiles.entries.clone(), Privilege::Read)
                .arg(&self.values, self.tiles.entries.clone(), Privilege::Read)
                .arg(x.store(), self.tiles.x.clone(), Privilege::Read);
            ir.submit(task)?;
        }
        Ok(Array::from_view(&self.cx, y.view()))
    }
}

/// The width of a distributed matrix's indices: the host matrix's column width, unless a
/// tile holds more entries than `i32` counts (`tile_entries`), which needs `i64` row ends.
fn index_width(columns: IndexWidth, tile_entries: impl IntoIterator<Item = i64>) -> IndexWidth {
    let fits = |entries: i64| entries <= i64::from(i32::MAX);
    match columns {
        IndexWidth::I32 if tile_entries.into_iter().all(fits) => IndexWidth::I32,
        _ => IndexWidth::I64,
    }
}

/// A 1-d store of `len` indices in `width` (each fits: the caller chose `width` for them).
fn indices(
    ir: &diffuse_ir::Context,
    len: i64,
    width: IndexWidth,
    values: impl ExactSizeIterator<Item = i64>,
    what: &str,
) -> Result<Store, SparseError> {
    Ok(match width {
        IndexWidth::I32 => {
            ir.store_from_vec(&[len], alloc::collect(values.map(|v| v as i32), what)?)?
        }
        IndexWidth::I64 => ir.store_from_vec(&[len], alloc::collect(values, what)?)?,
    })
}

/// The 1-d box `[lo, hi)`.
fn span(lo: i64, hi: i64) -> Rect {
    Rect {
        lo: Tuple::splat(1, lo),
        hi: Tuple::splat(1, hi),
    }
}

/// The SpMV task kind for row ends and column indices of `width` (registered once per
/// width).
// The declaration returns the IR's registration error, large by design (see diffuse-ir).
#[allow(clippy::result_large_err)]
fn spmv_kind(width: IndexWidth) -> Result<Arc<TaskKind>, SparseError> {
    static KINDS: [OnceLock<Arc<TaskKind>>; 2] = [OnceLock::new(), OnceLock::new()];
    let (slot, name, dtype) = match width {
        IndexWidth::I32 => (&KINDS[0], "sparse.spmv.f64.i32", DType::I32),
        IndexWidth::I64 => (&KINDS[1], "sparse.spmv.f64.i64", DType::I64),
    };
    if let Some(k) = slot.get() {
        return Ok(Arc::clone(k));
    }
    let kind = TaskKind::lookup_or_register(name, |builder| {
        let builder = builder
            .arg("y", DType::F64, Privilege::Write)
            .arg("ends", dtype, Privilege::Read)
            .arg("columns", dtype, Privilege::Read)
            .arg("values", DType::F64, Privilege::Read)
            .arg("x", DType::F64, Privilege::Read)
            .aligned(&[0, 1])
            // Lets the JIT compile the product into fused kernels (see `crate::mlir`).
            .mlir(Arc::new(SpmvGenerator { name, width }));
        match width {
            IndexWidth::I32 => builder.register(spmv_native::<i32>),
            IndexWidth::I64 => builder.register(spmv_native::<i64>),
        }
    })?;
    Ok(Arc::clone(slot.get_or_init(|| kind)))
}

/// The elements of a 1-d view (none for an empty one).
fn elements<'a, T: diffuse_ir::Element>(v: &'a ReadView<'_, T>) -> &'a [T] {
    if v.rows() == 0 {
        &[]
    } else {
        v.row(0)
    }
}

/// The native SpMV of one row tile: each row's entries in stored order, summed
/// sequentially (the order [`HostCsr::matvec`] uses); a row starts where the previous one
/// ended, the tile's first at 0.
fn spmv_native<I>(t: &PointTask<'_>) -> Result<(), KernelError>
where
    I: diffuse_ir::Element + Copy + TryInto<usize>,
{
    let ends = t.read::<I>(1)?;
    let columns = t.read::<I>(2)?;
    let values = t.read::<f64>(3)?;
    let x = t.read::<f64>(4)?;
    let mut y = t.write::<f64>(0)?;
    if y.rows() == 0 {
        // An empty tile (the last ones, when the rows do not divide evenly).
        return Ok(());
    }
    let (columns, values, x) = (elements(&columns), elements(&values), elements(&x));
    let mut lo = 0;
    for (out, &hi) in y.row_mut(0).iter_mut().zip(ends.row(0)) {
        let hi: usize = hi
            .try_into()
            .ok()
            .filter(|&hi| lo <= hi && hi <= values.len() && hi <= columns.len())
            .ok_or_else(|| {
                t.error(format!(
                    "a row ending outside {lo}..={} of the entries stored",
                    values.len()
                ))
            })?;
        let mut sum = 0.0;
        for (&c, &v) in columns[lo..hi].iter().zip(&values[lo..hi]) {
            let c: usize = c
                .try_into()
                .ok()
                .filter(|&c| c < x.len())
                .ok_or_else(|| t.error(format!("a column index outside 0..{}", x.len())))?;
            sum += v * x[c];
        }
        *out = sum;
        lo = hi;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_are_32_bit_while_columns_and_every_tile_fit() {
        let max = i64::from(i32::MAX);
        assert_eq!(index_width(IndexWidth::I32, [5, max]), IndexWidth::I32);
        assert_eq!(index_width(IndexWidth::I32, [5, max + 1]), IndexWidth::I64);
        assert_eq!(index_width(IndexWidth::I64, [5]), IndexWidth::I64);
        assert_eq!(index_width(IndexWidth::I32, []), IndexWidth::I32);
    }
}
