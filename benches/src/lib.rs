//! Criterion benchmarks and the peer (NumPy) comparison harness for diffuse.
//!
//! - `benches/fusion_analysis.rs`: the cost of the fusion analysis per task, fresh and
//!   memoized, over window sizes and launch-domain sizes (it must not grow with the number of
//!   launch points: the analysis is scale-free). Run `cargo bench -p diffuse-benches`.
//! - `benches/launch.rs`: what one memoized launch costs (plan replay and point dispatch) on
//!   tiny arrays, unfused, fused with native kernels and fused with a compiled kernel.
//! - `benches/stream.rs`: a STREAM-like triad on one thread and on every core, the memory
//!   bandwidth that element-wise kernels (fused or not) are measured against.
//! - `peers/numpy_apps.py` with `scripts/peers.sh`: the applications next to NumPy.
//!
//! This library holds what the benchmarks share: building realistic task windows.

#![warn(missing_docs)]
#![allow(clippy::result_large_err)]

use std::sync::{Arc, OnceLock};

use diffuse_ir::{Context, DType, IndexTask, IrError, Privilege, Store, TaskKind, Tuple, View};

/// The stencil's element-wise kinds (never executed here).
fn kinds() -> &'static (Arc<TaskKind>, Arc<TaskKind>, Arc<TaskKind>) {
    static KINDS: OnceLock<(Arc<TaskKind>, Arc<TaskKind>, Arc<TaskKind>)> = OnceLock::new();
    KINDS.get_or_init(|| {
        let declare = |name: &str, inputs: usize| {
            let mut b = TaskKind::builder(name);
            for i in 0..inputs {
                b = b.arg(format!("in{i}"), DType::F64, Privilege::Read);
            }
            b.arg("out", DType::F64, Privilege::Write)
                .register(|_| Ok(()))
                .unwrap_or_else(|e| panic!("registering {name}: {e}"))
        };
        (
            declare("bench.add", 2),
            declare("bench.scale", 1),
            declare("bench.copy", 1),
        )
    })
}

/// A window of `iterations` stencil iterations (Figure 2(c): four ADDs, a scale and the copy
/// into `center`, six tasks each) over an `(n + 2) x 6` grid launched on `points x 1` points,
/// `n = 2 * points`. The temporaries' application handles are dropped, as a NumPy program
/// drops them. Stores are never allocated: nothing runs.
pub fn stencil_window(points: i64, iterations: usize) -> Result<Vec<IndexTask>, IrError> {
    let ctx = Context::detached();
    let (add, scale, copy) = kinds();
    let n = 2 * points;
    let grid = ctx.create_store(&[n + 2, 6], DType::F64)?;
    let view = |r: i64, c: i64| View::new(&grid, Tuple::new(&[r, c])?, Tuple::shape(&[n, 4])?);
    let (center, north, east, west, south) = (
        view(1, 1)?,
        view(0, 1)?,
        view(1, 2)?,
        view(1, 0)?,
        view(2, 1)?,
    );
    let launch = Tuple::shape(&[points, 1])?;
    let mut window = Vec::with_capacity(6 * iterations);
    let task = |kind: &Arc<TaskKind>, ins: &[&View], out: &View| -> Result<IndexTask, IrError> {
        let mut t = IndexTask::new(kind, launch);
        for v in ins {
            t = t.arg(v.store(), v.blocked(launch)?, Privilege::Read);
        }
        Ok(t.arg(out.store(), out.blocked(launch)?, Privilege::Write))
    };
    for _ in 0..iterations {
        let fresh = || -> Result<Store, IrError> { ctx.create_store(&[n, 4], DType::F64) };
        let (t1, t2, t3, avg, work) = (fresh()?, fresh()?, fresh()?, fresh()?, fresh()?);
        window.push(task(add, &[&center, &north], &t1.view())?);
        window.push(task(add, &[&t1.view(), &east], &t2.view())?);
        window.push(task(add, &[&t2.view(), &west], &t3.view())?);
        window.push(task(add, &[&t3.view(), &south], &avg.view())?);
        window.push(task(scale, &[&avg.view()], &work.view())?);
        window.push(task(copy, &[&work.view()], &center)?);
    }
    Ok(window)
}
