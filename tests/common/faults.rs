//! Kinds that fail or panic at chosen points, and a launch of them, for the fault tests of
//! both backends.

use std::sync::Arc;

use diffuse_ir::{DType, IndexTask, IrError, KernelError, PointTask, Privilege, TaskKind, Tuple};

use super::kind_once;

/// Fails the point task `t` when bit `point[0]` of `mask` is set: by returning the error
/// "injected {what}failure {point}", or by panicking ("injected {what}panic {point}") when
/// `panics`.
pub fn fail_if_masked(
    t: &PointTask<'_>,
    mask: i64,
    panics: bool,
    what: &str,
) -> Result<(), KernelError> {
    let p = t.point()[0];
    if mask & (1 << p) == 0 {
        return Ok(());
    }
    if panics {
        panic!("injected {what}panic {p}");
    }
    Err(t.error(format!("injected {what}failure {p}")))
}

/// Writes `point[0] + 1` over its tile of argument 0, then, if bit `point[0]` of scalar 0
/// is set, fails: by returning an error, or by panicking when `panics`.
fn faulty_kind(short: &str, panics: bool) -> Arc<TaskKind> {
    kind_once(
        short,
        |b| {
            b.arg("out", DType::F64, Privilege::Write)
                .scalar(DType::I64)
        },
        move |t| {
            let mask = t.scalar::<i64>(0)?;
            let mut out = t.write::<f64>(0)?;
            out.row_mut(0).fill(t.point()[0] as f64 + 1.0);
            fail_if_masked(t, mask, panics, "")
        },
    )
}

pub fn fail_at_kind() -> Arc<TaskKind> {
    faulty_kind("fail_at", false)
}

pub fn panic_at_kind() -> Arc<TaskKind> {
    faulty_kind("panic_at", true)
}

pub fn launch_1d(
    c: &diffuse_ir::Context,
    kind: &Arc<TaskKind>,
    out: &diffuse_ir::Store,
    points: i64,
    mask: i64,
) -> Result<(), IrError> {
    let launch = Tuple::shape(&[points]).unwrap();
    c.submit(
        IndexTask::new(kind, launch)
            .arg(out, out.view().blocked(launch).unwrap(), Privilege::Write)
            .scalar(mask),
    )?;
    // With a window the task may still be buffered: kernel faults surface at the flush.
    c.flush_window()
}
