//! A chain of element-wise f64 tasks that raises IEEE exceptions on demand, shared by the
//! floating-point exception tests of both backends.

use std::sync::Arc;

use diffuse::backend::point::fp::FpFlags;
use diffuse_ir::{Context, DType, Store, TaskKind, Tuple};

use super::fusion::{ew_add_kind, ew_mul_kind};
use super::{binary_kind, Arith, PREFIX};

/// `a / b` of a binary kind.
const DIV: Arith = Arith::plain(
    |_, a, b| a / b,
    "%r = arith.divf %x0, %x1 : {T}\nlinalg.yield %r : {T}",
);

/// `out = a / b`, element-wise (fuses, runs in strips natively).
pub fn div_kind() -> Arc<TaskKind> {
    binary_kind("fp_div", true, DIV)
}

pub const N: usize = 256;

/// A 1-d store of `N` copies of `v`.
pub fn filled(ctx: &Context, v: f64) -> Store {
    ctx.store_from_vec(&[N as i64], vec![v; N]).unwrap()
}

/// Submits `out = kind(a, b)` over two blocks.
pub fn apply(ctx: &Context, kind: &Arc<TaskKind>, a: &Store, b: &Store) -> Store {
    let launch = Tuple::shape(&[2]).unwrap();
    let out = ctx.create_store(&[N as i64], DType::F64).unwrap();
    super::submit_blocked(ctx, kind, launch, &out, a, b).unwrap();
    out
}

/// The union of the flags `raised` records (each entry must name a task of this binary).
pub fn union(raised: &[(Arc<str>, FpFlags)]) -> FpFlags {
    raised.iter().fold(FpFlags::NONE, |acc, (name, flags)| {
        assert!(
            name.contains(PREFIX),
            "an unexpected task raised {flags}: {name}"
        );
        acc | *flags
    })
}

/// `(a / b) * 2 + 1` as three tasks that fuse into one window; returns the result.
pub fn chain(ctx: &Context, a: f64, b: f64) -> Vec<f64> {
    // Inputs first: writing a store's data flushes the window.
    let (a, b, two, one) = (
        filled(ctx, a),
        filled(ctx, b),
        filled(ctx, 2.0),
        filled(ctx, 1.0),
    );
    let q = apply(ctx, &div_kind(), &a, &b);
    let p = apply(ctx, &ew_mul_kind(), &q, &two);
    let r = apply(ctx, &ew_add_kind(), &p, &one);
    ctx.read::<f64>(&r.view()).unwrap()
}
