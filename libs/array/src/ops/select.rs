//! Selecting the elements where a boolean mask holds (NumPy's `a[mask]`, `extract` and
//! `nonzero`), as a parallel compaction: the mask is cut into blocks of whole leading rows
//! (so every block is a contiguous run of its row-major order), one task counts each
//! block's elements that hold, the counts are read back (the result's length depends on the
//! data; the pending work runs) and summed into each block's offset (an exclusive prefix sum
//! on the host, one number per block), then one task has every block write its selected
//! elements (or their indices) at its offset of the result.

use diffuse_ir::{DType, IndexTask, KernelError, Partition, PointTask, Privilege, Rect, Tuple};

use crate::array::Array;
use crate::element::with_any;
use crate::error::{ArrayError, ArrayResult};
use crate::kinds::{kind, Kernel};
use crate::ops::along::write_all;

/// How a mask is cut for compaction: a launch of `[blocks, 1, ..., 1]` giving point `k` the
/// rows `k * rows_per_block ..` of every leading index, and where each block's selected
/// elements go in the result.
struct Compaction {
    launch: Tuple,
    rows_per_block: i64,
    /// Each block's count, in block order.
    counts: Vec<i64>,
}

impl Compaction {
    /// Cuts `mask` (non-empty, at least 1-d) into the partitioner's row blocks and counts
    /// each block's true elements.
    fn count(mask: &Array) -> Result<Compaction, ArrayError> {
        let cx = mask.context();
        let shape = mask.shape();
        let launch = cx.partitioner().row_blocks(shape);
        let (rows, blocks) = (shape[0], launch[0]);
        let rows_per_block = rows / blocks + i64::from(rows % blocks != 0);
        let dims = shape.dims();
        let count_kind = kind(format!("array.count_blocks.r{dims}"), |b| {
            b.arg("mask", DType::Bool, Privilege::Read)
                .arg("count", DType::I64, Privilege::Write)
                .register(count_kernel)
        })?;
        let counts = Array::fresh(cx, launch, DType::I64)?;
        cx.submit(
            IndexTask::new(&count_kind, launch)
                .arg(mask.store(), mask.view().blocked(launch)?, Privilege::Read)
                .arg(
                    counts.store(),
                    counts.view().blocked(launch)?,
                    Privilege::Write,
                ),
        )?;
        Ok(Compaction {
            launch,
            rows_per_block,
            counts: counts.to_vec::<i64>()?,
        })
    }

    /// The number of selected elements.
    fn total(&self) -> i64 {
        self.counts.iter().sum()
    }

    /// The partition of a 1-d result giving each block its run (the prefix sums of the
    /// counts).
    fn runs(&self) -> Result<Partition, ArrayError> {
        let mut start = 0;
        let boxes = self
            .counts
            .iter()
            .map(|&c| {
                let run = Rect {
                    lo: Tuple::splat(1, start),
                    hi: Tuple::splat(1, start + c),
                };
                start += c;
                run
            })
            .collect();
        Ok(Partition::image(self.launch, boxes)?)
    }
}

/// A native kernel writing how many elements of its block of the boolean argument 0 hold
/// into its one element of argument 1.
fn count_kernel(task: &PointTask<'_>) -> Result<(), KernelError> {
    let mask = task.read::<bool>(0)?;
    let count = (0..mask.rows())
        .map(|r| mask.row(r).iter().filter(|&&keep| keep).count())
        .sum::<usize>();
    write_all(&mut task.write::<i64>(1)?, &[count as i64]);
    Ok(())
}

/// A native kernel writing the elements of its block of argument 0 where the boolean
/// argument 1 (blocked alike) holds into its run of the 1-d argument 2, row-major.
fn select_kernel<T: diffuse_ir::Element>() -> impl Kernel {
    |task| {
        let x = task.read::<T>(0)?;
        let mask = task.read::<bool>(1)?;
        let mut selected = Vec::new();
        for r in 0..x.rows() {
            selected.extend(
                x.row(r)
                    .iter()
                    .zip(mask.row(r))
                    .filter(|(_, &keep)| keep)
                    .map(|(&v, _)| v),
            );
        }
        let mut out = task.write::<T>(2)?;
        if selected.len() as i64 != out.shape().volume() {
            return Err(task.error(format!(
                "the mask selects {} elements, the block's run holds {}",
                selected.len(),
                out.shape().volume()
            )));
        }
        write_all(&mut out, &selected);
        Ok(())
    }
}

/// A native kernel writing, for every element of its block of the boolean argument 0 that
/// holds (row-major), its index along dimension `d` into its run of the 1-d argument
/// `1 + d`. The block of point `k` starts at row `k * rows_per_block` (scalar 0).
fn nonzero_kernel(dims: usize) -> impl Kernel {
    move |task| {
        let mask = task.read::<bool>(0)?;
        let shape = mask.shape();
        let mut outs = (0..dims)
            .map(|d| task.write::<i64>(1 + d))
            .collect::<Result<Vec<_>, _>>()?;
        let room = outs
            .first()
            .map_or(0, |o| o.shape().volume().max(0) as usize);
        let row_len = if dims == 0 {
            1
        } else {
            shape[dims - 1].max(0) as usize
        };
        // Each column has a row of slack past the run's room, so that a row is written
        // without a branch per element: every element is stored, and the cursor moves past
        // it only where the mask holds (masks mix at random, and a branch mispredicts).
        let mut columns: Vec<Vec<i64>> = vec![vec![0; room + row_len]; dims];
        let mut found = 0usize;
        let mut lead = vec![0i64; dims.saturating_sub(1)];
        let first_row = task.point()[0] * task.scalar::<i64>(0)?;
        // A 1-d block is one row: its indices start at the block's first element.
        let first_column = if dims == 1 { first_row } else { 0 };
        if let Some(row) = lead.first_mut() {
            *row = first_row;
        }
        for r in 0..mask.rows() {
            let row = mask.row(r);
            if found > room {
                break; // More than the run holds: reported below.
            }
            let mut next = found;
            for (d, column) in columns.iter_mut().enumerate() {
                let column = &mut column[found..found + row.len()];
                next = found;
                for (i, &keep) in row.iter().enumerate() {
                    column[next - found] = if d + 1 == dims {
                        first_column + i as i64
                    } else {
                        lead[d]
                    };
                    next += usize::from(keep);
                }
            }
            found = next;
            for d in (0..lead.len()).rev() {
                lead[d] += 1;
                // The block's first dimension runs on past its own extent (its rows are
                // numbered in the whole mask); the others wrap at theirs.
                if d == 0 || lead[d] < shape[d] {
                    break;
                }
                lead[d] = 0;
            }
        }
        if found != room {
            let holds = if found > room {
                "more than that".to_string()
            } else {
                found.to_string()
            };
            return Err(task.error(format!(
                "the block holds {holds} elements, its run has room for {room}"
            )));
        }
        for (out, column) in outs.iter_mut().zip(&columns) {
            write_all(out, &column[..found]);
        }
        Ok(())
    }
}

impl Array {
    /// NumPy's `nonzero` for a boolean array of one or more dimensions: per dimension, the
    /// int64 indices of the elements that hold, row-major. Reads the count of every row
    /// block back (waiting for the work pending on `self`), then one task has every block
    /// write its indices (see the module documentation).
    pub fn nonzero(&self) -> Result<Vec<Array>, ArrayError> {
        const OP: &str = "nonzero";
        if self.dtype() != DType::Bool {
            return Err(ArrayError::UnsupportedDType {
                op: OP,
                dtype: self.dtype(),
                expected: "a bool mask",
            });
        }
        let dims = self.ndim();
        if dims == 0 {
            return Err(ArrayError::BadArgument {
                op: OP,
                reason: "a 0-d array has no indices".into(),
            });
        }
        let cx = self.context();
        if self.is_empty() {
            return (0..dims)
                .map(|_| Array::fresh(cx, Tuple::shape(&[0])?, DType::I64))
                .collect();
        }
        let blocks = Compaction::count(self)?;
        let outs = (0..dims)
            .map(|_| Array::fresh(cx, Tuple::shape(&[blocks.total()])?, DType::I64))
            .collect::<Result<Vec<_>, _>>()?;
        if blocks.total() == 0 {
            return Ok(outs);
        }
        let kind = kind(format!("array.nonzero.r{dims}"), move |b| {
            let mut b = b.arg("mask", DType::Bool, Privilege::Read);
            for _ in 0..dims {
                b = b.arg("index", DType::I64, Privilege::Write);
            }
            b.scalar(DType::I64).register(nonzero_kernel(dims))
        })?;
        let runs = blocks.runs()?;
        let mut task = IndexTask::new(&kind, blocks.launch)
            .arg(
                self.store(),
                self.view().blocked(blocks.launch)?,
                Privilege::Read,
            )
            .scalar(blocks.rows_per_block);
        for out in &outs {
            task = task.arg(out.store(), runs.clone(), Privilege::Write);
        }
        cx.submit(task)?;
        Ok(outs)
    }

    /// NumPy's `self[mask]` for a boolean `mask` of this array's shape: the elements where
    /// it holds, row-major, as a 1-d array. Reads the count of every row block back (waiting
    /// for the work pending on `mask`), then one task has every block write its elements.
    pub fn select(&self, mask: &Array) -> ArrayResult {
        const OP: &str = "select";
        self.context().check_same(mask.context(), OP)?;
        if mask.dtype() != DType::Bool {
            return Err(ArrayError::UnsupportedDType {
                op: OP,
                dtype: mask.dtype(),
                expected: "a bool mask",
            });
        }
        ArrayError::check_same_shape(OP, self.shape(), mask.shape())?;
        let cx = self.context();
        let dtype = self.dtype();
        if self.is_empty() {
            return Array::fresh(cx, Tuple::shape(&[0])?, dtype);
        }
        let blocks = Compaction::count(mask)?;
        let out = Array::fresh(cx, Tuple::shape(&[blocks.total()])?, dtype)?;
        if blocks.total() == 0 {
            return Ok(out);
        }
        let kind = kind(format!("array.select.{dtype}"), move |b| {
            let b = b
                .arg("x", dtype, Privilege::Read)
                .arg("mask", DType::Bool, Privilege::Read)
                .arg("out", dtype, Privilege::Write);
            with_any!(dtype, T => b.register(select_kernel::<T>()))
        })?;
        let launch = blocks.launch;
        let task = IndexTask::new(&kind, launch)
            .arg(self.store(), self.view().blocked(launch)?, Privilege::Read)
            .arg(mask.store(), mask.view().blocked(launch)?, Privilege::Read)
            .arg(out.store(), blocks.runs()?, Privilege::Write);
        cx.submit(task)?;
        Ok(out)
    }
}
