//! Helpers shared by the test binaries: contexts over the embedded backend, the task kinds
//! every test uses (registered once per process, since the task-kind registry rejects
//! duplicate names), and the modules below.
//!
//! The kinds have MLIR generators ([`generators`]), so fused tasks of them run JIT-compiled
//! kernels on backends with a JIT (the default) and their native variants in runtimes without
//! one (`RuntimeConfig::jit: None`).

pub mod faults;
pub mod fp;
pub mod fusion;
pub mod generators;
pub mod legion;
pub mod replay;
pub mod streams;

use std::sync::Arc;

use diffuse::EmbeddedConfig;
use diffuse_ir::{
    for_each_row, Context, DType, Element, IrError, KernelError, PointTask, Privilege, ReductionOp,
    TaskKind, TaskKindBuilder,
};
use generators::{Elementwise, Reduction};

/// A context over a fresh embedded backend with `procs` processors (fusion and the shared
/// JIT on, as by default).
pub fn ctx(procs: usize) -> Context {
    diffuse::embedded(EmbeddedConfig {
        procs: Some(procs),
        ..Default::default()
    })
    .expect("embedded backend starts")
}

/// A fresh embedded backend with `procs` processors (so tests can also call it directly).
pub fn embedded_backend(procs: usize) -> Arc<diffuse::EmbeddedBackend> {
    Arc::new(
        diffuse::EmbeddedBackend::new(EmbeddedConfig {
            procs: Some(procs),
            ..Default::default()
        })
        .expect("embedded backend starts"),
    )
}

/// A runtime that runs every task unfused on `backend` (so tests can also call the backend
/// directly), placing points by `placement` when given.
pub fn unfused_runtime(
    backend: Arc<dyn diffuse::Backend>,
    placement: Option<Arc<dyn diffuse::Placement>>,
) -> Arc<diffuse::Runtime> {
    Arc::new(diffuse::Runtime::new(
        backend,
        diffuse::RuntimeConfig {
            fusion: diffuse::FusionConfig::off(),
            placement,
            ..Default::default()
        },
    ))
}

/// A context that runs every task unfused on `backend`.
pub fn unfused(backend: Arc<dyn diffuse::Backend>) -> Context {
    Context::new(unfused_runtime(backend, None))
}

/// `len` deterministic values in `[-magnitude, magnitude)` with full 53-bit mantissas (from
/// a splitmix64 stream of `seed`), so any change of operand or evaluation order shows in the
/// bits.
pub fn random_data_in(len: usize, seed: u64, magnitude: f64) -> Vec<f64> {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    (0..len)
        .map(|_| ((next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * magnitude)
        .collect()
}

/// The kind [`name`]`(short)`: the first call registers it, declared by `declare` (given a
/// builder of that name), with `kernel`; later calls return the same kind.
pub fn kind_once(
    short: &str,
    declare: impl FnOnce(TaskKindBuilder) -> TaskKindBuilder,
    kernel: impl Fn(&PointTask<'_>) -> Result<(), KernelError> + Send + Sync + 'static,
) -> Arc<TaskKind> {
    TaskKind::lookup_or_register(&name(short), |b| declare(b).register(kernel))
        .expect("kind registers")
}

/// The prefix of every kind name registered by this test binary.
pub const PREFIX: &str = "embedded_test.";

pub fn name(short: &str) -> String {
    format!("{PREFIX}{short}")
}

/// An f64 operation `f(s, x, y)` in the two forms a kind needs: the native function and the
/// MLIR region body (see [`Elementwise::body`]) computing the same value with the same
/// operations in the same order, so compiled and native results are bitwise equal.
#[derive(Clone, Copy)]
pub struct Arith {
    /// The native computation.
    pub native: fn(f64, f64, f64) -> f64,
    /// The region body.
    pub mlir: &'static str,
    /// True when the kind takes the f64 scalar `s` (`%s0` in the body).
    pub scaled: bool,
}

impl Arith {
    /// An operation without the scalar `s`.
    pub const fn plain(native: fn(f64, f64, f64) -> f64, mlir: &'static str) -> Arith {
        Arith {
            native,
            mlir,
            scaled: false,
        }
    }

    /// An operation of the scalar `s`.
    pub const fn scaled(native: fn(f64, f64, f64) -> f64, mlir: &'static str) -> Arith {
        Arith {
            native,
            mlir,
            scaled: true,
        }
    }
}

/// `a + b` of a binary kind.
pub const ADD: Arith = Arith::plain(
    |_, a, b| a + b,
    "%r = arith.addf %x0, %x1 : {T}\nlinalg.yield %r : {T}",
);

/// `a * b` of a binary kind.
pub const MUL: Arith = Arith::plain(
    |_, a, b| a * b,
    "%r = arith.mulf %x0, %x1 : {T}\nlinalg.yield %r : {T}",
);

/// `s * a + b` of a binary kind: a multiplication, then an addition (no FMA).
pub const AXPY: Arith = Arith::scaled(
    |s, a, b| s * a + b,
    "%p = arith.mulf %s0, %x0 : {T}\n%r = arith.addf %p, %x1 : {T}\nlinalg.yield %r : {T}",
);

/// `a` of a unary kind.
pub const COPY: Arith = Arith::plain(|_, _, a| a, "linalg.yield %x0 : {T}");

/// `s * a` of a unary kind.
pub const SCALE: Arith = Arith::scaled(
    |s, _, a| s * a,
    "%r = arith.mulf %s0, %x0 : {T}\nlinalg.yield %r : {T}",
);

/// `out + a` of a unary kind (for `ReadWrite` or `Reduce(Sum)` outputs).
pub const ACCUMULATE: Arith = Arith::plain(
    |_, o, a| o + a,
    "%r = arith.addf %o, %x0 : {T}\nlinalg.yield %r : {T}",
);

/// `b` with the f64 arguments of an `out = f(x, y)` kind, named `[out, x, y]`: `out` (Write),
/// then `x` and `y` (Read).
pub fn write_read_read(b: TaskKindBuilder, [out, x, y]: [&str; 3]) -> TaskKindBuilder {
    b.arg(out, DType::F64, Privilege::Write)
        .arg(x, DType::F64, Privilege::Read)
        .arg(y, DType::F64, Privilege::Read)
}

/// `b` with the f64 arguments of an aligned `out = f(out, a)` kind: `out` (`privilege`), then
/// `a` (Read).
pub fn unary_args(b: TaskKindBuilder, privilege: Privilege) -> TaskKindBuilder {
    b.arg("out", DType::F64, privilege)
        .arg("a", DType::F64, Privilege::Read)
        .aligned(&[0, 1])
}

/// An aligned `out = op(s, a, b)` kind (W, R, R), declared element-wise (so fused groups of
/// it may run in strips) when `elementwise`.
pub fn binary_kind(short: &str, elementwise: bool, op: Arith) -> Arc<TaskKind> {
    kind_once(
        short,
        |b| {
            let b = write_read_read(b, ["out", "a", "b"]).aligned(&[0, 1, 2]);
            with_options(b, elementwise, op, &[1, 2])
        },
        move |t| {
            let s = if op.scaled { t.scalar::<f64>(0)? } else { 0.0 };
            for_each_row::<f64>(t, 0, &[1, 2], |out, ins| {
                for ((o, &a), &b) in out.iter_mut().zip(ins[0]).zip(ins[1]) {
                    *o = (op.native)(s, a, b);
                }
            })
        },
    )
}

/// An aligned `out = op(s, out, a)` kind (`privilege`, R), declared element-wise when
/// `elementwise`. For `Reduce` the kernel sees its private accumulator as `out`.
pub fn unary_kind(
    short: &str,
    privilege: Privilege,
    elementwise: bool,
    op: Arith,
) -> Arc<TaskKind> {
    kind_once(
        short,
        |b| with_options(unary_args(b, privilege), elementwise, op, &[1]),
        move |t| {
            let s = if op.scaled { t.scalar::<f64>(0)? } else { 0.0 };
            for_each_row::<f64>(t, 0, &[1], |out, ins| {
                for (o, &a) in out.iter_mut().zip(ins[0]) {
                    *o = (op.native)(s, *o, a);
                }
            })
        },
    )
}

/// `b` declared element-wise when `elementwise`, with `op`'s scalar, and with the generator
/// of `op` writing argument 0 from the arguments `inputs`.
fn with_options(
    mut b: TaskKindBuilder,
    elementwise: bool,
    op: Arith,
    inputs: &'static [usize],
) -> TaskKindBuilder {
    if elementwise {
        b = b.elementwise();
    }
    if op.scaled {
        b = b.scalar(DType::F64);
    }
    b.mlir(Arc::new(Elementwise {
        out: 0,
        inputs,
        body: op.mlir,
    }))
}

/// `out = a + b` (W, R, R), all aligned.
pub fn add_kind() -> Arc<TaskKind> {
    binary_kind("add", false, ADD)
}

/// `out = a * b` (W, R, R), all aligned.
pub fn mul_kind() -> Arc<TaskKind> {
    binary_kind("mul", false, MUL)
}

/// `out = s * a + b` (W, R, R; scalar f64 `s`), all aligned.
pub fn axpy_kind() -> Arc<TaskKind> {
    binary_kind("axpy", false, AXPY)
}

/// `out = a` (W, R), aligned.
pub fn copy_kind() -> Arc<TaskKind> {
    unary_kind("copy", Privilege::Write, false, COPY)
}

/// `a += b` (RW, R), aligned.
pub fn add_assign_kind() -> Arc<TaskKind> {
    unary_kind("add_assign", Privilege::ReadWrite, false, ACCUMULATE)
}

/// Folds every element of argument 0 (Read, any rank) into argument 1, a 0-d `Reduce(op)`
/// store (normally through `Replicate`). Fails if the private accumulator does not start at
/// the operator's identity.
fn reduce_all_kernel(t: &PointTask<'_>) -> Result<(), KernelError> {
    let Privilege::Reduce(op) = t.privilege(1)? else {
        return Err(t.error("argument 1 is not a reduction"));
    };
    let input = t.read::<f64>(0)?;
    let mut acc = t.write::<f64>(1)?;
    if acc.shape().dims() != 0 {
        return Err(t.error(format!("accumulator has shape {}", acc.shape())));
    }
    let mut v = acc
        .get(&[])
        .ok_or_else(|| t.error("0-d accumulator unreadable"))?;
    let identity = f64::reduction_identity(op);
    if v.to_bits() != identity.to_bits() {
        return Err(t.error(format!(
            "accumulator starts at {v}, not the identity {identity}"
        )));
    }
    for r in 0..input.rows() {
        for &x in input.row(r) {
            v = f64::reduce(op, v, x);
        }
    }
    acc.set(&[], v);
    Ok(())
}

/// Whole-input reduction kinds: `sum_all`, `prod_all`, `min_all`, `max_all`.
pub fn reduce_all_kind(op: ReductionOp) -> Arc<TaskKind> {
    let short = match op {
        ReductionOp::Sum => "sum_all",
        ReductionOp::Prod => "prod_all",
        ReductionOp::Min => "min_all",
        ReductionOp::Max => "max_all",
    };
    kind_once(
        short,
        |b| {
            b.arg("in", DType::F64, Privilege::Read)
                .arg("acc", DType::F64, Privilege::Reduce(op))
                .mlir(Arc::new(Reduction { keep: 0 }))
        },
        reduce_all_kernel,
    )
}

/// Per-row sums: argument 0 is a 2-D input (Read), argument 1 a 1-D `Reduce(Sum)` vector whose
/// sub-store has one element per input row of the point's sub-store.
pub fn row_sum_kind() -> Arc<TaskKind> {
    kind_once(
        "row_sum",
        |b| {
            b.arg("in", DType::F64, Privilege::Read)
                .arg("acc", DType::F64, Privilege::Reduce(ReductionOp::Sum))
                .mlir(Arc::new(Reduction { keep: 1 }))
        },
        |t| {
            let input = t.read::<f64>(0)?;
            let mut acc = t.write::<f64>(1)?;
            if input.shape().dims() != 2 || acc.shape().dims() != 1 {
                return Err(t.error("row_sum wants a 2-d input and a 1-d accumulator"));
            }
            if input.shape()[0] != acc.shape()[0] {
                return Err(t.error(format!(
                    "input sub-store {} vs accumulator {}",
                    input.shape(),
                    acc.shape()
                )));
            }
            let sums = acc.row_mut(0);
            for (r, s) in sums.iter_mut().enumerate() {
                if *s != 0.0 {
                    return Err(t.error("accumulator does not start at 0"));
                }
                for &x in input.row(r) {
                    *s = f64::reduce(ReductionOp::Sum, *s, x);
                }
            }
            Ok(())
        },
    )
}

/// `out = s * x` where `s` is a 0-d store read through `Replicate` (W, R, R-0d).
pub fn scale_by_store_kind() -> Arc<TaskKind> {
    scale_by_store("scale_by_store", false)
}

/// `scale_by_store_kind`'s contract under the name `short`, declared element-wise when
/// `elementwise`.
pub fn scale_by_store(short: &str, elementwise: bool) -> Arc<TaskKind> {
    kind_once(
        short,
        |b| {
            let b = write_read_read(b, ["out", "x", "s"])
                .aligned(&[0, 1])
                .mlir(Arc::new(Elementwise {
                    out: 0,
                    // `s` (0-d: broadcast to every element), then `x`.
                    inputs: &[2, 1],
                    body: "%r = arith.mulf %x0, %x1 : {T}\nlinalg.yield %r : {T}",
                }));
            if elementwise {
                b.elementwise()
            } else {
                b
            }
        },
        |t| {
            let s = t.read::<f64>(2)?;
            if s.shape().dims() != 0 {
                return Err(t.error(format!("scale store has shape {}", s.shape())));
            }
            let s = s.get(&[]).ok_or_else(|| t.error("0-d read failed"))?;
            for_each_row::<f64>(t, 0, &[1], |out, ins| {
                for (o, &x) in out.iter_mut().zip(ins[0]) {
                    *o = s * x;
                }
            })
        },
    )
}

/// Fills argument 0 (Write, any rank) with scalar 0.
pub fn fill_kind() -> Arc<TaskKind> {
    kind_once(
        "fill",
        |b| {
            b.arg("out", DType::F64, Privilege::Write)
                .scalar(DType::F64)
        },
        |t| {
            let v = t.scalar::<f64>(0)?;
            let mut out = t.write::<f64>(0)?;
            for r in 0..out.rows() {
                out.row_mut(r).fill(v);
            }
            Ok(())
        },
    )
}

/// Submits `acc += sum(input)`: `input` blocked by `launch`, the 0-d `acc` reduced by every
/// point through `Replicate`.
pub fn submit_sum_all(
    c: &Context,
    input: &diffuse_ir::Store,
    acc: &diffuse_ir::Store,
    launch: diffuse_ir::Tuple,
) -> Result<(), IrError> {
    c.submit(
        diffuse_ir::IndexTask::new(&reduce_all_kind(ReductionOp::Sum), launch)
            .arg(input, input.view().blocked(launch)?, Privilege::Read)
            .arg(
                acc,
                diffuse_ir::Partition::replicate(),
                Privilege::Reduce(ReductionOp::Sum),
            ),
    )
}

/// Submits `out = kind(a, b)` with all three stores blocked by `launch`.
pub fn submit_blocked(
    c: &Context,
    kind: &Arc<TaskKind>,
    launch: diffuse_ir::Tuple,
    out: &diffuse_ir::Store,
    a: &diffuse_ir::Store,
    b: &diffuse_ir::Store,
) -> Result<(), IrError> {
    let part = |s: &diffuse_ir::Store| s.view().blocked(launch);
    c.submit(
        diffuse_ir::IndexTask::new(kind, launch)
            .arg(out, part(out)?, Privilege::Write)
            .arg(a, part(a)?, Privilege::Read)
            .arg(b, part(b)?, Privilege::Read),
    )
}

/// Runs `kind` (one `Write` argument) over `n` launch points on a fresh 1-d store of `n`
/// elements, blocked, and returns what the points wrote.
pub fn run_writer(c: &Context, kind: &Arc<TaskKind>, n: i64) -> Vec<f64> {
    let out = c.create_store(&[n], DType::F64).unwrap();
    let launch = diffuse_ir::Tuple::shape(&[n]).unwrap();
    c.submit(diffuse_ir::IndexTask::new(kind, launch).arg(
        &out,
        out.view().blocked(launch).unwrap(),
        Privilege::Write,
    ))
    .unwrap();
    c.read::<f64>(&out.view()).unwrap()
}

/// A fresh f64 store of extents `shape` holding 0, 1, 2, ... in row-major order.
pub fn counting_store(c: &Context, shape: &[i64]) -> diffuse_ir::Store {
    let len = shape.iter().product::<i64>();
    c.store_from_vec(shape, (0..len).map(|i| i as f64).collect())
        .unwrap()
}

/// The view of `store` at `offset` of extents `shape`.
pub fn view_at(store: &diffuse_ir::Store, offset: &[i64], shape: &[i64]) -> diffuse_ir::View {
    diffuse_ir::View::new(
        store,
        diffuse_ir::Tuple::new(offset).unwrap(),
        diffuse_ir::Tuple::shape(shape).unwrap(),
    )
    .unwrap()
}
