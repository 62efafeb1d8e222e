//! Task fusion on the embedded backend (Diffuse paper §4–5): with the window and fusion on, a
//! program must compute exactly what it computes with fusion off and what a plain sequential
//! evaluation computes, bit for bit, while executing fewer index tasks and never allocating the
//! temporaries that fusion made point-local.
//!
//! - [`fused_streams_match_unfused_and_sequential`] is the differential property, on the native
//!   fused path (`jit: None`): random streams of tasks over a few random 1-d/2-d stores and
//!   random aliasing views of them (blocked tilings of views, reads of shifted views of one
//!   store as in a stencil), with every privilege: `Write`, `ReadWrite`, `Reduce(Sum)` of a
//!   view into a 0-d store through `Replicate`, into an aligned view, and into a 1-d view
//!   through a row tiling that several points share; launch domains from a small set (so some
//!   neighbours cannot fuse); random window sizes (1..=12, or adaptive) and strip sizes (tiny,
//!   to force strips, or the default); explicit `flush_window()` points, host reads and writes
//!   in the middle; loop bodies repeated with new stores (so memoized plans are replayed, also
//!   for windows that differ only in aliasing); and application handles of intermediate stores
//!   dropped right after their last use (so temporaries arise). Each stream runs with fusion
//!   on, with fusion off, and on a sequential host model; every store still held, and every
//!   value read back in the middle, must be bitwise equal across the three. The model folds
//!   reductions the way the backend promises (each point folds its own block from the identity,
//!   blocks folded into the store in point order), so reduction results are compared bitwise
//!   too, not just within a tolerance. Coverage counters fail the test if the streams stop
//!   exercising fused groups, temporaries, fused reductions, strips or memo replays.
//! - [`jit_fused_streams_match_unfused_and_sequential`] runs the same random streams with the
//!   JIT on: every kind of the streams has an MLIR generator (tests/embedded/generators.rs,
//!   bodies with the native kernels' operations in their order), so fused tasks run compiled
//!   kernels (composed bodies, temporaries as SSA values, scalars, 0-d stores read by every
//!   element, `ReadWrite` and `Reduce` outputs), and the results must still be bitwise equal to
//!   the unfused run and the model. The property uses its own [`Jit`], so each distinct fused
//!   signature compiles once (about 0.1 s; the streams keep producing new ones, which is
//!   what bounds its case count). Coverage counters (per fused task, through a recording
//!   [`Backend`] in front of the embedded one) fail the test if the JIT stops being exercised:
//!   cases running compiled code, compiled fused tasks with temporaries and with reductions,
//!   kernels compiled.
//! - Deterministic tests: the Figure 2 stencil (two executed tasks per iteration, four
//!   temporaries, strips, lower peak memory), the Figure 8 temporaries (exactly `z`), the fold
//!   order of reductions of a temporary, kernel faults inside a fused task, fusion off
//!   executing every task, and the adaptive window growing, without a JIT (the fold order of
//!   reductions also with one); and with the JIT: the stencil running one compiled kernel per
//!   iteration, bitwise equal to the unfused run, a compile failure falling back to native
//!   kernels (counted once per signature), a broadcast row (unit dimensions), reductions by
//!   every operator (signed zeros, NaN), and two regression tests of compiled fused tasks: two
//!   reductions into one store, and a store overwritten after a constituent read it.
//!
//! The native property runs 3,000 random streams by default (about a second), the JIT property
//! 80 (about 20-25 s on two cores, nearly all of it compiling some 200 kernels). For longer
//! local runs set `DIFFUSE_FUSION_CASES` or `DIFFUSE_JIT_CASES`, e.g.
//! `DIFFUSE_FUSION_CASES=20000 cargo test -p diffuse --test embedded fusion:: -- --nocapture`
//! or
//! `DIFFUSE_JIT_CASES=1000 cargo test -p diffuse --test embedded jit_fused -- --nocapture`.

use std::cell::Cell;
use std::sync::{Arc, Mutex, OnceLock};

use diffuse::backend::LaunchPlan;
use diffuse::{
    Backend, BackendStats, EmbeddedBackend, EmbeddedConfig, FlushRecord, FusionConfig,
    MachineShape, Runtime, RuntimeConfig,
};
use diffuse_ir::{
    for_each_row, Context, DType, HostData, IndexTask, IrError, KernelError, Partition, PointTask,
    Privilege, ProjComponent, Projection, Rect, ReductionOp, Store, StoreId, StoreRef, TaskKind,
    Tuple, View,
};
use diffuse_jit::Jit;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};

use crate::generators::Elementwise;
use crate::{
    add_assign_kind, add_kind, axpy_kind, binary_kind, copy_kind, kind_once, mul_kind, name,
    reduce_all_kind, row_sum_kind, scale_by_store_kind, unary_kind, Arith, ACCUMULATE, ADD, AXPY,
    COPY, MUL, SCALE,
};

// ---------------------------------------------------------------------------------------------
// Kinds. The shared kinds of tests/embedded.rs are not declared element-wise, so fused groups
// of them run point by point; these element-wise twins let fused groups run strip by strip.
// All but `fail_at` have MLIR generators (see tests/embedded/generators.rs).
// ---------------------------------------------------------------------------------------------

/// Element-wise `out = a + b`.
fn ew_add_kind() -> Arc<TaskKind> {
    static K: OnceLock<Arc<TaskKind>> = OnceLock::new();
    binary_kind(&K, "fusion.add", true, ADD)
}

/// Element-wise `out = a * b`.
fn ew_mul_kind() -> Arc<TaskKind> {
    static K: OnceLock<Arc<TaskKind>> = OnceLock::new();
    binary_kind(&K, "fusion.mul", true, MUL)
}

/// Element-wise `out = s * a + b`.
fn ew_axpy_kind() -> Arc<TaskKind> {
    static K: OnceLock<Arc<TaskKind>> = OnceLock::new();
    binary_kind(&K, "fusion.axpy", true, AXPY)
}

/// Element-wise `out = a`.
fn ew_copy_kind() -> Arc<TaskKind> {
    static K: OnceLock<Arc<TaskKind>> = OnceLock::new();
    unary_kind(&K, "fusion.copy", Privilege::Write, true, COPY)
}

/// Element-wise `out = s * a` (the stencil's MULT).
fn ew_scale_kind() -> Arc<TaskKind> {
    static K: OnceLock<Arc<TaskKind>> = OnceLock::new();
    unary_kind(&K, "fusion.scale", Privilege::Write, true, SCALE)
}

/// Element-wise `out += a` (RW, R).
fn ew_add_assign_kind() -> Arc<TaskKind> {
    static K: OnceLock<Arc<TaskKind>> = OnceLock::new();
    unary_kind(
        &K,
        "fusion.add_assign",
        Privilege::ReadWrite,
        true,
        ACCUMULATE,
    )
}

/// `acc += a` through `Reduce(Sum)` on an aligned view (declared element-wise: reductions
/// must still never run in strips).
fn add_reduce_kind() -> Arc<TaskKind> {
    static K: OnceLock<Arc<TaskKind>> = OnceLock::new();
    unary_kind(
        &K,
        "fusion.add_reduce",
        Privilege::Reduce(ReductionOp::Sum),
        true,
        ACCUMULATE,
    )
}

/// Element-wise `out = a + row` (W, R, R): `row` has one row, which every row of `out` adds
/// (NumPy broadcasting; compiled, `row`'s dimension 0 is a unit dimension read at index 0).
fn ew_add_row_kind() -> Arc<TaskKind> {
    static K: OnceLock<Arc<TaskKind>> = OnceLock::new();
    kind_once(
        &K,
        || {
            TaskKind::builder(name("fusion.add_row"))
                .arg("out", DType::F64, Privilege::Write)
                .arg("a", DType::F64, Privilege::Read)
                .arg("row", DType::F64, Privilege::Read)
                .elementwise()
                .mlir(Arc::new(Elementwise {
                    out: 0,
                    inputs: &[1, 2],
                    body: ADD.mlir,
                }))
        },
        |t| {
            let (a, row) = (t.read::<f64>(1)?, t.read::<f64>(2)?);
            let mut out = t.write::<f64>(0)?;
            let (shape, broadcast) = (out.shape(), row.shape());
            if a.shape() != shape
                || shape.dims() != 2
                || broadcast.dims() != 2
                || (broadcast[0], broadcast[1]) != (1, shape[1])
            {
                return Err(t.error(format!(
                    "add_row of {} and {} into {}",
                    a.shape(),
                    row.shape(),
                    out.shape()
                )));
            }
            for r in 0..out.rows() {
                for ((o, &x), &y) in out.row_mut(r).iter_mut().zip(a.row(r)).zip(row.row(0)) {
                    *o = (ADD.native)(0.0, x, y);
                }
            }
            Ok(())
        },
    )
}

/// Element-wise `out = s * x`, `s` a 0-d store read through `Replicate` (W, R, R-0d).
fn ew_scale_by_store_kind() -> Arc<TaskKind> {
    static K: OnceLock<Arc<TaskKind>> = OnceLock::new();
    crate::scale_by_store(&K, "fusion.scale_by_store", true)
}

/// Element-wise `out = a`, then fails at the points whose bit is set in scalar 0: by returning
/// an error, or (when scalar 1 is true) by panicking.
pub(crate) fn fail_at_kind() -> Arc<TaskKind> {
    static K: OnceLock<Arc<TaskKind>> = OnceLock::new();
    kind_once(
        &K,
        || {
            TaskKind::builder(name("fusion.fail_at"))
                .arg("out", DType::F64, Privilege::Write)
                .arg("a", DType::F64, Privilege::Read)
                .aligned(&[0, 1])
                .elementwise()
                .scalar(DType::I64)
                .scalar(DType::Bool)
        },
        |t: &PointTask<'_>| -> Result<(), KernelError> {
            let mask = t.scalar::<i64>(0)?;
            let panics = t.scalar::<bool>(1)?;
            for_each_row::<f64>(t, 0, &[1], |out, ins| out.copy_from_slice(ins[0]))?;
            let p = t.point()[0];
            if mask & (1 << p) != 0 {
                if panics {
                    panic!("injected fused panic {p}");
                }
                return Err(t.error(format!("injected fused failure {p}")));
            }
            Ok(())
        },
    )
}

// ---------------------------------------------------------------------------------------------
// Shared helpers.
// ---------------------------------------------------------------------------------------------

/// What one fused task did.
struct FusedRun {
    /// Temporaries.
    temporaries: usize,
    /// True when a constituent reduces.
    reduces: bool,
    /// Its point tasks that ran JIT-compiled code.
    compiled_points: u64,
}

/// A backend, recording every fused task it runs.
struct Observed {
    backend: Arc<dyn Backend>,
    fused: Mutex<Vec<FusedRun>>,
}

impl Observed {
    /// The fused tasks run so far, in order.
    fn take_fused(&self) -> Vec<FusedRun> {
        std::mem::take(&mut *self.fused.lock().unwrap())
    }
}

impl Backend for Observed {
    fn name(&self) -> &str {
        self.backend.name()
    }

    fn machine(&self) -> MachineShape {
        self.backend.machine()
    }

    fn capabilities(&self) -> diffuse::backend::Capabilities {
        self.backend.capabilities()
    }

    fn execute(&self, plan: &LaunchPlan) -> Result<(), IrError> {
        let t = plan.template();
        let fused = t.constituents() > 1 || t.temporaries() > 0;
        let temporaries = t.temporaries();
        let reduces = !t.reductions().is_empty();
        let before = self.backend.stats().compiled_points;
        let mut result = self.backend.execute(plan);
        if fused {
            // Backends that run plans asynchronously (Legion) count points when they ran.
            result = result.and_then(|()| self.backend.flush());
            self.fused.lock().unwrap().push(FusedRun {
                temporaries,
                reduces,
                compiled_points: self.backend.stats().compiled_points - before,
            });
        }
        result
    }

    fn defers_failures(&self) -> bool {
        self.backend.defers_failures()
    }

    fn flush(&self) -> Result<(), IrError> {
        self.backend.flush()
    }

    fn read(&self, store: &StoreRef, rect: Rect) -> Result<HostData, IrError> {
        self.backend.read(store, rect)
    }

    fn write(&self, store: &StoreRef, rect: Rect, data: HostData) -> Result<(), IrError> {
        self.backend.write(store, rect, data)
    }

    fn stats(&self) -> BackendStats {
        self.backend.stats()
    }

    fn reset_peak_memory(&self) {
        self.backend.reset_peak_memory()
    }
}

/// A context over a runtime over an (observed) embedded backend, with both kept for their
/// counters.
struct Rig {
    backend: Arc<dyn Backend>,
    observed: Arc<Observed>,
    runtime: Arc<Runtime>,
    ctx: Context,
}

/// A rig of `procs` processors running fused tasks through `jit` (natively when `None`).
fn rig(
    procs: usize,
    fusion: FusionConfig,
    strip_bytes: Option<usize>,
    jit: Option<Arc<Jit>>,
) -> Rig {
    let mut config = EmbeddedConfig {
        procs: Some(procs),
        ..Default::default()
    };
    if let Some(s) = strip_bytes {
        config.strip_bytes = s;
    }
    let backend: Arc<dyn Backend> =
        Arc::new(EmbeddedBackend::new(config).expect("embedded backend starts"));
    rig_over(backend, fusion, jit)
}

/// A rig over `backend` running fused tasks through `jit` (natively when `None`).
fn rig_over(backend: Arc<dyn Backend>, fusion: FusionConfig, jit: Option<Arc<Jit>>) -> Rig {
    let observed = Arc::new(Observed {
        backend: backend.clone(),
        fused: Mutex::new(Vec::new()),
    });
    let runtime = Arc::new(Runtime::new(
        observed.clone(),
        RuntimeConfig {
            fusion,
            jit,
            placement: None,
        },
    ));
    let ctx = Context::new(runtime.clone());
    Rig {
        backend,
        observed,
        runtime,
        ctx,
    }
}

fn fused(window: Option<usize>) -> FusionConfig {
    FusionConfig {
        enabled: true,
        window,
    }
}

/// The two ways a fused task runs, labelled: natively, and through a fresh JIT.
fn native_and_jit() -> [(&'static str, Option<Arc<Jit>>); 2] {
    [("JIT off", None), ("JIT on", Some(Arc::new(Jit::new())))]
}

/// Random values in [-2, 2) (see [`crate::random_data_in`]).
fn random_data(len: usize, seed: u64) -> Vec<f64> {
    crate::random_data_in(len, seed, 2.0)
}

/// True when `a` and `b` agree to 1e-9 relative to their magnitude (at least 1), NaN with
/// NaN: equality up to the reassociation of floating-point reductions.
fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(&x, &y)| {
            (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0)
        })
}

/// Bit patterns, every NaN mapped to one pattern (bitwise equality up to NaN payloads).
fn bits(v: &[f64]) -> Vec<u64> {
    v.iter()
        .map(|x| {
            if x.is_nan() {
                f64::NAN.to_bits()
            } else {
                x.to_bits()
            }
        })
        .collect()
}

/// The kind names of what a flush executed, split back into constituents; one entry per
/// executed task: (constituent kind names, temporaries).
fn executed_groups(log: &[FlushRecord]) -> Vec<(Vec<String>, usize)> {
    log.iter()
        .flat_map(|r| r.executed.iter())
        .map(|e| match e.split_once(" (temporaries: ") {
            Some((names, rest)) => (
                names.split('+').map(str::to_string).collect(),
                rest.trim_end_matches(')')
                    .parse()
                    .expect("temporaries count in the log"),
            ),
            None => (vec![e.clone()], 0),
        })
        .collect()
}

fn whole(ctx: &Context, shape: &[i64]) -> Store {
    ctx.create_store(shape, DType::F64).unwrap()
}

// ---------------------------------------------------------------------------------------------
// The differential property.
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// c = a + b
    Add,
    /// c = a * b
    Mul,
    /// c = s * a + b
    Axpy,
    /// c = a
    Copy,
    /// c += a (ReadWrite)
    AddAssign,
    /// c += a through Reduce(Sum) on a view
    AddReduce,
    /// c = s * a, s a 0-d store read through Replicate
    ScaleByStore,
    /// acc += sum(view) through Reduce(Sum) into a 0-d store via Replicate
    SumAll,
    /// out[i] += sum of row i of a 2-d view, through Reduce(Sum) on a 1-d view tiled by rows
    /// with a projection dropping the column dim (several points fold into one tile)
    RowSum,
}

impl Op {
    fn inputs(self) -> usize {
        match self {
            Op::Add | Op::Mul | Op::Axpy => 2,
            _ => 1,
        }
    }

    fn kind(self, elementwise: bool) -> Arc<TaskKind> {
        match (self, elementwise) {
            (Op::Add, true) => ew_add_kind(),
            (Op::Add, false) => add_kind(),
            (Op::Mul, true) => ew_mul_kind(),
            (Op::Mul, false) => mul_kind(),
            (Op::Axpy, true) => ew_axpy_kind(),
            (Op::Axpy, false) => axpy_kind(),
            (Op::Copy, true) => ew_copy_kind(),
            (Op::Copy, false) => copy_kind(),
            (Op::AddAssign, true) => ew_add_assign_kind(),
            (Op::AddAssign, false) => add_assign_kind(),
            (Op::AddReduce, _) => add_reduce_kind(),
            (Op::ScaleByStore, true) => ew_scale_by_store_kind(),
            (Op::ScaleByStore, false) => scale_by_store_kind(),
            (Op::SumAll, _) => reduce_all_kind(ReductionOp::Sum),
            (Op::RowSum, _) => row_sum_kind(),
        }
    }
}

#[derive(Clone, Debug)]
struct RawStore {
    two_d: bool,
    slack: [i64; 2],
    seed: u64,
    keep: bool,
}

#[derive(Clone, Debug)]
struct RawTask {
    op: Op,
    elementwise: bool,
    two_d: bool,
    /// Write a new store (created right before the task).
    fresh: bool,
    /// The new store is one larger than the task in every dim (a non-covering write).
    pad: bool,
    /// Keep the new store's handle to the end (else it is dropped after its last use).
    keep: bool,
    /// Read the most recently created store (a producer-consumer chain).
    chain: bool,
    out: usize,
    inputs: [usize; 2],
    acc: usize,
    small: bool,
    extents: [i64; 2],
    offsets: [[i64; 2]; 3],
    main_launch: bool,
    launch: usize,
    scalar: f64,
    /// 0-1: flush_window, 2: read the output back, 3: overwrite it from the host.
    after: u8,
    seed: u64,
}

#[derive(Clone, Debug)]
struct RawCase {
    /// 0: all stores 1-D, 1: all 2-D, 2: mixed.
    dims_mode: u8,
    base1: i64,
    base2: [i64; 2],
    stores: Vec<RawStore>,
    accs: Vec<u64>,
    main_launch: [usize; 2],
    tasks: Vec<RawTask>,
    /// The task list runs this many times in a row, like a solver loop's body (new stores
    /// each time), so that isomorphic windows recur and memoized plans are replayed.
    repeat: usize,
    /// Repetitions shift input view offsets and launch choices by the repetition number: the
    /// same kinds and stores with other aliasing, which a memoized plan must not be confused by.
    shift: bool,
    window: Option<usize>,
    strip_bytes: Option<usize>,
    procs: usize,
}

fn raw_case() -> impl Strategy<Value = RawCase> {
    let store = (
        any::<bool>(),
        [0i64..=2, 0i64..=2],
        any::<u64>(),
        prop::bool::weighted(0.8),
    )
        .prop_map(|(two_d, slack, seed, keep)| RawStore {
            two_d,
            slack,
            seed,
            keep,
        });
    let op = prop_oneof![
        3 => Just(Op::Add),
        2 => Just(Op::Mul),
        2 => Just(Op::Axpy),
        2 => Just(Op::Copy),
        2 => Just(Op::AddAssign),
        1 => Just(Op::AddReduce),
        1 => Just(Op::ScaleByStore),
        2 => Just(Op::SumAll),
        1 => Just(Op::RowSum),
    ];
    let flags = (
        op,
        prop::bool::weighted(0.9),
        any::<bool>(),
        prop::bool::weighted(0.4),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.5),
    );
    let picks = (
        0usize..8,
        [0usize..8, 0usize..8],
        0usize..2,
        prop::bool::weighted(0.15),
        [0i64..16, 0i64..16],
        [[0i64..3, 0i64..3], [0i64..3, 0i64..3], [0i64..3, 0i64..3]],
        prop::bool::weighted(0.75),
        0usize..4,
        -2.0f64..2.0,
        0u8..12,
        any::<u64>(),
    );
    let task = (flags, picks).prop_map(
        |(
            (op, elementwise, two_d, fresh, pad, keep, chain),
            (out, inputs, acc, small, extents, offsets, main_launch, launch, scalar, after, seed),
        )| RawTask {
            op,
            elementwise,
            two_d,
            fresh,
            pad,
            keep,
            chain,
            out,
            inputs,
            acc,
            small,
            extents,
            offsets,
            main_launch,
            launch,
            scalar,
            after,
            seed,
        },
    );
    let window = prop_oneof![1 => Just(None), 4 => (1usize..=12).prop_map(Some)];
    // Tiny strips (a few elements each) so that small fused points are cut into strips.
    let strip = prop_oneof![
        3 => (8usize..=48).prop_map(Some),
        1 => (49usize..=256).prop_map(Some),
        2 => Just(None),
    ];
    (
        (0u8..3, 2i64..=12, [2i64..=6, 2i64..=6]),
        prop::collection::vec(store, 2..=4),
        prop::collection::vec(any::<u64>(), 1..=2),
        [0usize..3, 0usize..4],
        prop::collection::vec(task, 1..=16),
        (1usize..=3, any::<bool>(), window, strip, 1usize..=3),
    )
        .prop_map(
            |(
                (dims_mode, base1, base2),
                stores,
                accs,
                main_launch,
                tasks,
                (repeat, shift, w, s, procs),
            )| {
                RawCase {
                    dims_mode,
                    base1,
                    base2,
                    stores,
                    accs,
                    main_launch,
                    tasks,
                    repeat,
                    shift,
                    window: w,
                    strip_bytes: s,
                    procs,
                }
            },
        )
}

/// A view `[offset, offset + shape)` of store `store` (0-d: the whole 0-d store).
#[derive(Clone, Debug)]
struct Operand {
    store: usize,
    offset: Vec<i64>,
    shape: Vec<i64>,
}

#[derive(Clone, Debug)]
struct Task {
    op: Op,
    elementwise: bool,
    /// The written (or reduced) operand.
    out: Operand,
    inputs: Vec<Operand>,
    /// The 0-d store a `ScaleByStore` reads.
    scale: Option<usize>,
    launch: Vec<i64>,
    scalar: f64,
    /// A store created (all zero) right before the task.
    creates: Option<usize>,
}

#[derive(Clone, Debug)]
enum Step {
    Task(Task),
    Flush,
    Read(Operand),
    Write(Operand, Vec<f64>),
}

#[derive(Clone, Debug)]
struct StoreSpec {
    shape: Vec<i64>,
    /// Initial contents; `None` for stores a task creates (zero until written).
    data: Option<Vec<f64>>,
    /// Held to the end and compared; otherwise dropped right after its last use.
    keep: bool,
}

#[derive(Debug)]
struct Plan {
    stores: Vec<StoreSpec>,
    steps: Vec<Step>,
    /// Handles dropped before the first step (never used, not kept).
    drop_first: Vec<usize>,
    /// Handles dropped right after each step.
    drop_after: Vec<Vec<usize>>,
    window: Option<usize>,
    strip_bytes: Option<usize>,
    procs: usize,
}

impl Plan {
    /// True when some task reduces (its result depends on the order contributions fold in).
    fn reduces(&self) -> bool {
        self.steps.iter().any(|step| {
            matches!(step, Step::Task(t) if matches!(t.op, Op::AddReduce | Op::SumAll | Op::RowSum))
        })
    }
}

const LAUNCH_1D: [[i64; 1]; 3] = [[1], [2], [3]];
const LAUNCH_2D: [[i64; 2]; 4] = [[1, 1], [2, 1], [1, 2], [2, 2]];

/// The largest launch extent up to `l` whose blocked tiling of `e` elements reaches no empty
/// tile (`(l - 1) * ceil(e / l) < e`), dim by dim.
fn fit_launch(launch: &[i64], shape: &[i64]) -> Vec<i64> {
    launch
        .iter()
        .zip(shape)
        .map(|(&l, &e)| {
            (1..=l)
                .rev()
                .find(|&l| (l - 1) * ((e + l - 1) / l) < e)
                .unwrap_or(1)
        })
        .collect()
}

fn volume(shape: &[i64]) -> usize {
    shape.iter().product::<i64>() as usize
}

fn plan(raw: &RawCase) -> Plan {
    let base = |rank: usize| -> Vec<i64> {
        if rank == 1 {
            vec![raw.base1]
        } else {
            raw.base2.to_vec()
        }
    };
    let mut stores: Vec<StoreSpec> = raw
        .stores
        .iter()
        .map(|s| {
            let rank = match raw.dims_mode {
                0 => 1,
                1 => 2,
                _ if s.two_d => 2,
                _ => 1,
            };
            let shape: Vec<i64> = base(rank).iter().zip(s.slack).map(|(b, k)| b + k).collect();
            StoreSpec {
                data: Some(random_data(volume(&shape), s.seed)),
                shape,
                keep: s.keep,
            }
        })
        .collect();
    let first_acc = stores.len();
    for &seed in &raw.accs {
        stores.push(StoreSpec {
            shape: vec![],
            data: Some(random_data(1, seed)),
            keep: true,
        });
    }
    let accs = raw.accs.len();
    let ranks: Vec<usize> = [1, 2]
        .into_iter()
        .filter(|&r| stores[..first_acc].iter().any(|s| s.shape.len() == r))
        .collect();

    let mut steps = Vec::new();
    let mut latest_fresh: Option<usize> = None;
    for (index, t) in raw
        .tasks
        .iter()
        .cycle()
        .take(raw.tasks.len() * raw.repeat)
        .enumerate()
    {
        let shift = if raw.shift {
            index / raw.tasks.len()
        } else {
            0
        };
        let rank = if ranks.len() == 2 {
            if t.two_d {
                2
            } else {
                1
            }
        } else {
            ranks[0]
        };
        let b = base(rank);
        // Row sums need a 2-d input; on 1-d stores they become whole sums.
        let op = match t.op {
            Op::RowSum if rank == 1 => Op::SumAll,
            op => op,
        };
        let shape: Vec<i64> = if t.small {
            (0..rank).map(|d| 1 + t.extents[d] % b[d]).collect()
        } else {
            b
        };
        let fits = |s: &StoreSpec| {
            s.shape.len() == rank && s.shape.iter().zip(&shape).all(|(have, need)| have >= need)
        };
        let candidates: Vec<usize> = (0..stores.len()).filter(|&i| fits(&stores[i])).collect();
        let operand = |k: usize, store: usize, stores: &[StoreSpec]| Operand {
            store,
            offset: (0..rank)
                .map(|d| {
                    // Inputs move, outputs stay: the read/write aliasing changes.
                    let moved = if k > 0 { shift as i64 } else { 0 };
                    (t.offsets[k][d] + moved) % (stores[store].shape[d] - shape[d] + 1)
                })
                .collect(),
            shape: shape.clone(),
        };
        let inputs: Vec<Operand> = (0..op.inputs())
            .map(|k| {
                let store = match latest_fresh {
                    Some(f) if k == 0 && t.chain && fits(&stores[f]) => f,
                    _ => candidates[t.inputs[k] % candidates.len()],
                };
                operand(k + 1, store, &stores)
            })
            .collect();
        let launch_set: Vec<Vec<i64>> = if rank == 1 {
            LAUNCH_1D.iter().map(|l| l.to_vec()).collect()
        } else {
            LAUNCH_2D.iter().map(|l| l.to_vec()).collect()
        };
        let pick = shift
            + if t.main_launch {
                raw.main_launch[rank - 1]
            } else {
                t.launch
            };
        let launch = fit_launch(&launch_set[pick % launch_set.len()], &shape);
        let acc = first_acc + t.acc % accs;
        let mut creates = None;
        let out = if op == Op::SumAll {
            Operand {
                store: acc,
                offset: vec![],
                shape: vec![],
            }
        } else if op == Op::RowSum {
            // Into a view of a 1-d store at least as long as the input has rows, or a new one.
            let rows = shape[0];
            let outs: Vec<usize> = (0..stores.len())
                .filter(|&i| stores[i].shape.len() == 1 && stores[i].shape[0] >= rows)
                .collect();
            if t.fresh || outs.is_empty() {
                let pad = i64::from(t.pad);
                stores.push(StoreSpec {
                    shape: vec![rows + pad],
                    data: None,
                    keep: t.keep,
                });
                creates = Some(stores.len() - 1);
                Operand {
                    store: stores.len() - 1,
                    offset: vec![t.offsets[0][0] % (pad + 1)],
                    shape: vec![rows],
                }
            } else {
                let store = outs[t.out % outs.len()];
                Operand {
                    store,
                    offset: vec![t.offsets[0][0] % (stores[store].shape[0] - rows + 1)],
                    shape: vec![rows],
                }
            }
        } else {
            let outs: Vec<usize> = candidates
                .iter()
                .copied()
                .filter(|c| inputs.iter().all(|i| i.store != *c))
                .collect();
            if t.fresh || outs.is_empty() {
                let pad = i64::from(t.pad);
                stores.push(StoreSpec {
                    shape: shape.iter().map(|e| e + pad).collect(),
                    data: None,
                    keep: t.keep,
                });
                let id = stores.len() - 1;
                creates = Some(id);
                Operand {
                    store: id,
                    offset: (0..rank).map(|d| t.offsets[0][d] % (pad + 1)).collect(),
                    shape: shape.clone(),
                }
            } else {
                operand(0, outs[t.out % outs.len()], &stores)
            }
        };
        let after = match t.after {
            0 | 1 => Some(Step::Flush),
            2 => Some(Step::Read(out.clone())),
            3 => Some(Step::Write(
                out.clone(),
                random_data(volume(&out.shape), t.seed),
            )),
            _ => None,
        };
        steps.push(Step::Task(Task {
            op,
            elementwise: t.elementwise,
            out,
            inputs,
            scale: (op == Op::ScaleByStore).then_some(acc),
            launch,
            scalar: t.scalar,
            creates,
        }));
        steps.extend(after);
        if creates.is_some() {
            latest_fresh = creates;
        }
    }

    // Every store not kept loses its handle right after the last step that names it.
    let mut last_use: Vec<Option<usize>> = vec![None; stores.len()];
    for (i, step) in steps.iter().enumerate() {
        let used: Vec<usize> = match step {
            Step::Task(t) => std::iter::once(t.out.store)
                .chain(t.inputs.iter().map(|o| o.store))
                .chain(t.scale)
                .collect(),
            Step::Read(o) | Step::Write(o, _) => vec![o.store],
            Step::Flush => vec![],
        };
        for s in used {
            last_use[s] = Some(i);
        }
    }
    let mut drop_first = Vec::new();
    let mut drop_after = vec![Vec::new(); steps.len()];
    for (s, spec) in stores.iter().enumerate() {
        if spec.keep {
            continue;
        }
        match last_use[s] {
            Some(i) => drop_after[i].push(s),
            None => drop_first.push(s),
        }
    }
    Plan {
        stores,
        steps,
        drop_first,
        drop_after,
        window: raw.window,
        strip_bytes: raw.strip_bytes,
        procs: raw.procs,
    }
}

/// Row-major linear index of `offset + (i, j)` in a store of `shape` (1-D uses `j` only).
fn linear(shape: &[i64], offset: &[i64], i: i64, j: i64) -> usize {
    match shape.len() {
        0 => 0,
        1 => (offset[0] + j) as usize,
        2 => ((offset[0] + i) * shape[1] + offset[1] + j) as usize,
        d => unreachable!("{d}-d store"),
    }
}

/// A 0-, 1- or 2-d extent as (rows, cols).
fn rows_cols(shape: &[i64]) -> (i64, i64) {
    match shape {
        [] => (1, 1),
        [c] => (1, *c),
        [r, c] => (*r, *c),
        other => unreachable!("{other:?}"),
    }
}

/// The sequential model of one task, in the kernels' arithmetic order.
fn model_apply(model: &mut [Vec<f64>], stores: &[StoreSpec], t: &Task) {
    let at = |model: &[Vec<f64>], o: &Operand, i: i64, j: i64| {
        model[o.store][linear(&stores[o.store].shape, &o.offset, i, j)]
    };
    if t.op == Op::SumAll {
        // Each point folds its block row-major from the identity (-0.0); the blocks are folded
        // into the store in row-major point order.
        let input = &t.inputs[0];
        let (rows, cols) = rows_cols(&input.shape);
        let (lr, lc) = rows_cols(&t.launch);
        let (tr, tc) = ((rows + lr - 1) / lr, (cols + lc - 1) / lc);
        let mut acc = model[t.out.store][0];
        for pr in 0..lr {
            for pc in 0..lc {
                let mut part = -0.0f64;
                for i in pr * tr..((pr + 1) * tr).min(rows) {
                    for j in pc * tc..((pc + 1) * tc).min(cols) {
                        part += at(model, input, i, j);
                    }
                }
                acc += part;
            }
        }
        model[t.out.store][0] = acc;
        return;
    }
    if t.op == Op::RowSum {
        // Each point folds each row of its block from the identity; points fold into the
        // output rows in row-major point order.
        let input = &t.inputs[0];
        let (rows, cols) = rows_cols(&input.shape);
        let (lr, lc) = rows_cols(&t.launch);
        let (tr, tc) = ((rows + lr - 1) / lr, (cols + lc - 1) / lc);
        for pr in 0..lr {
            for pc in 0..lc {
                for i in pr * tr..((pr + 1) * tr).min(rows) {
                    let mut part = -0.0f64;
                    for j in pc * tc..((pc + 1) * tc).min(cols) {
                        part += at(model, input, i, j);
                    }
                    let dst = linear(&stores[t.out.store].shape, &t.out.offset, 0, i);
                    model[t.out.store][dst] += part;
                }
            }
        }
        return;
    }
    let (rows, cols) = rows_cols(&t.out.shape);
    let s = t.scale.map(|s| model[s][0]);
    let mut results = Vec::new();
    for i in 0..rows {
        for j in 0..cols {
            let a = at(model, &t.inputs[0], i, j);
            let value = match t.op {
                Op::Add => a + at(model, &t.inputs[1], i, j),
                Op::Mul => a * at(model, &t.inputs[1], i, j),
                Op::Axpy => t.scalar * a + at(model, &t.inputs[1], i, j),
                Op::Copy => a,
                Op::AddAssign | Op::AddReduce => at(model, &t.out, i, j) + a,
                Op::ScaleByStore => s.expect("scale store") * a,
                Op::SumAll | Op::RowSum => unreachable!(),
            };
            results.push((
                linear(&stores[t.out.store].shape, &t.out.offset, i, j),
                value,
            ));
        }
    }
    for (dst, value) in results {
        model[t.out.store][dst] = value;
    }
}

fn model_read(model: &[Vec<f64>], stores: &[StoreSpec], o: &Operand) -> Vec<f64> {
    let (rows, cols) = rows_cols(&o.shape);
    let mut out = Vec::new();
    for i in 0..rows {
        for j in 0..cols {
            out.push(model[o.store][linear(&stores[o.store].shape, &o.offset, i, j)]);
        }
    }
    out
}

fn model_write(model: &mut [Vec<f64>], stores: &[StoreSpec], o: &Operand, data: &[f64]) {
    let (rows, cols) = rows_cols(&o.shape);
    let mut k = 0;
    for i in 0..rows {
        for j in 0..cols {
            model[o.store][linear(&stores[o.store].shape, &o.offset, i, j)] = data[k];
            k += 1;
        }
    }
}

/// What one way of running a plan left behind.
#[derive(Default)]
struct Outcome {
    /// Final contents of the kept stores (`None` for the others).
    finals: Vec<Option<Vec<f64>>>,
    /// Values read back in the middle of the stream, in order.
    reads: Vec<Vec<f64>>,
    submitted: u64,
    executed: u64,
    strip_points: u64,
    /// Windows whose plan was replayed from the planner's memo.
    replayed: u64,
    log: Vec<FlushRecord>,
    /// The fused tasks, in order.
    fused: Vec<FusedRun>,
}

fn run_model(plan: &Plan) -> Outcome {
    let mut model: Vec<Vec<f64>> = plan
        .stores
        .iter()
        .map(|s| {
            s.data
                .clone()
                .unwrap_or_else(|| vec![0.0; volume(&s.shape)])
        })
        .collect();
    let mut out = Outcome::default();
    for step in &plan.steps {
        match step {
            Step::Task(t) => model_apply(&mut model, &plan.stores, t),
            Step::Flush => {}
            Step::Read(o) => out.reads.push(model_read(&model, &plan.stores, o)),
            Step::Write(o, data) => model_write(&mut model, &plan.stores, o, data),
        }
    }
    out.finals = plan
        .stores
        .iter()
        .zip(model)
        .map(|(s, m)| s.keep.then_some(m))
        .collect();
    out
}

fn view_of(handles: &[Option<Store>], o: &Operand) -> View {
    let store = handles[o.store].as_ref().expect("a live handle");
    if o.shape.is_empty() {
        return store.view();
    }
    View::new(
        store,
        Tuple::new(&o.offset).unwrap(),
        Tuple::shape(&o.shape).unwrap(),
    )
    .expect("generated views fit their stores")
}

fn build_task(handles: &[Option<Store>], t: &Task) -> IndexTask {
    let launch = Tuple::shape(&t.launch).unwrap();
    let blocked = |o: &Operand| {
        let v = view_of(handles, o);
        (v.store().clone(), v.blocked(launch).unwrap())
    };
    let mut task = IndexTask::new(&t.op.kind(t.elementwise), launch);
    if t.op == Op::SumAll {
        let (s, p) = blocked(&t.inputs[0]);
        let acc = handles[t.out.store].as_ref().expect("live accumulator");
        return task.arg(&s, p, Privilege::Read).arg(
            acc,
            Partition::replicate(),
            Privilege::Reduce(ReductionOp::Sum),
        );
    }
    if t.op == Op::RowSum {
        let (s, p) = blocked(&t.inputs[0]);
        let out = view_of(handles, &t.out);
        let tile = (t.out.shape[0] + t.launch[0] - 1) / t.launch[0];
        let part = out
            .tiling_with(
                Tuple::shape(&[tile]).unwrap(),
                Projection::select_dims(2, &[0]).unwrap(),
            )
            .unwrap();
        return task.arg(&s, p, Privilege::Read).arg(
            out.store(),
            part,
            Privilege::Reduce(ReductionOp::Sum),
        );
    }
    let out_privilege = match t.op {
        Op::AddAssign => Privilege::ReadWrite,
        Op::AddReduce => Privilege::Reduce(ReductionOp::Sum),
        _ => Privilege::Write,
    };
    let (s, p) = blocked(&t.out);
    task = task.arg(&s, p, out_privilege);
    for input in &t.inputs {
        let (s, p) = blocked(input);
        task = task.arg(&s, p, Privilege::Read);
    }
    if let Some(scale) = t.scale {
        let s = handles[scale].as_ref().expect("live scale store");
        task = task.arg(s, Partition::replicate(), Privilege::Read);
    }
    if t.op == Op::Axpy {
        task = task.scalar(t.scalar);
    }
    task
}

/// Runs `plan` on a fresh embedded runtime with `fusion` (and `strip_bytes` and `jit` when
/// fused).
fn run_real(
    plan: &Plan,
    fusion: FusionConfig,
    strip_bytes: Option<usize>,
    jit: Option<Arc<Jit>>,
    on: On,
) -> Result<Outcome, String> {
    let r = match on {
        On::Embedded => rig(plan.procs, fusion, strip_bytes, jit),
        On::Legion => rig_over(crate::legion::backend(strip_bytes), fusion, jit),
    };
    r.runtime.record_streams(true);
    let c = &r.ctx;
    let mut handles: Vec<Option<Store>> = plan
        .stores
        .iter()
        .map(|s| {
            s.data
                .as_ref()
                .map(|d| c.store_from_vec(&s.shape, d.clone()).unwrap())
        })
        .collect();
    for &s in &plan.drop_first {
        handles[s] = None;
    }
    let mut out = Outcome::default();
    for (i, step) in plan.steps.iter().enumerate() {
        match step {
            Step::Task(t) => {
                if let Some(s) = t.creates {
                    handles[s] = Some(whole(c, &plan.stores[s].shape));
                }
                let task = build_task(&handles, t);
                c.submit(task)
                    .map_err(|e| format!("step {i}: submit failed: {e}"))?;
            }
            Step::Flush => c
                .flush_window()
                .map_err(|e| format!("step {i}: flush_window failed: {e}"))?,
            Step::Read(o) => out.reads.push(
                c.read::<f64>(&view_of(&handles, o))
                    .map_err(|e| format!("step {i}: read failed: {e}"))?,
            ),
            Step::Write(o, data) => c
                .write(&view_of(&handles, o), data.clone())
                .map_err(|e| format!("step {i}: write failed: {e}"))?,
        }
        for &s in &plan.drop_after[i] {
            handles[s] = None;
        }
    }
    c.flush_window()
        .map_err(|e| format!("final flush_window failed: {e}"))?;
    out.finals = handles
        .iter()
        .map(|h| h.as_ref().map(|s| c.read::<f64>(&s.view()).unwrap()))
        .collect();
    out.submitted = c.tasks_submitted();
    out.executed = r.backend.stats().tasks_executed;
    out.strip_points = r.backend.stats().strip_points;
    out.replayed = r.runtime.planner_stats().replayed;
    out.log = r.runtime.take_stream_log();
    out.fused = r.observed.take_fused();
    Ok(out)
}

/// Coverage of the fused runs, so that a generator or runtime change cannot silently make
/// the property vacuous.
#[derive(Default)]
pub(crate) struct Coverage {
    cases: Cell<usize>,
    submitted: Cell<u64>,
    executed: Cell<u64>,
    /// Executed fused tasks of two or more constituents.
    fused_groups: Cell<usize>,
    /// Fused tasks with at least one temporary, and temporaries in all.
    groups_with_temporaries: Cell<usize>,
    temporaries: Cell<usize>,
    /// Fused tasks with a reduction among their constituents.
    fused_reductions: Cell<usize>,
    /// Cases in which some fused point ran strip by strip.
    strip_cases: Cell<usize>,
    /// Cases with strips and temporaries (not necessarily in the same fused task).
    strip_temporary_cases: Cell<usize>,
    /// Cases in which the planner replayed a memoized plan.
    replay_cases: Cell<usize>,
    adaptive_cases: Cell<usize>,
    mid_reads: Cell<usize>,
    /// Tasks the backend ran as fused tasks (a group of one with temporaries included).
    fused_tasks: Cell<usize>,
    /// Fused tasks some point of which ran JIT-compiled code; of them, those with
    /// temporaries and those with a reduction; and the compiled point tasks in all.
    compiled_tasks: Cell<usize>,
    compiled_with_temporaries: Cell<usize>,
    compiled_reductions: Cell<usize>,
    compiled_points: Cell<u64>,
    /// Cases in which some point ran compiled code.
    compiled_cases: Cell<usize>,
}

fn bump(c: &Cell<usize>, by: usize) {
    c.set(c.get() + by);
}

impl Coverage {
    /// Cases that ran.
    pub(crate) fn cases(&self) -> usize {
        self.cases.get()
    }

    /// Fused tasks that ran compiled code.
    pub(crate) fn compiled_tasks(&self) -> usize {
        self.compiled_tasks.get()
    }

    /// Fails unless `count` is at least `per_case` times the number of cases.
    fn share(&self, what: &str, count: usize, per_case: f64) {
        let n = self.cases.get();
        assert!(
            count as f64 >= per_case * n as f64,
            "only {count} {what} in {n} cases"
        );
    }
}

/// Runs `raw` on the sequential model, with fusion off, and with fusion on (fused tasks
/// through `jit` when given), and checks that all three agree bit for bit.
/// Which backend a property runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum On {
    /// The embedded backend with the case's processor count.
    Embedded,
    /// The process's Legion runtime.
    Legion,
}

fn check_case(
    raw: &RawCase,
    cov: &Coverage,
    jit: Option<&Arc<Jit>>,
    on_backend: On,
) -> Result<(), TestCaseError> {
    let plan = plan(raw);
    let model = run_model(&plan);
    // Bitwise, except where Legion folds reductions: its built-in reduction operators fold
    // the points' contributions in an order of its own, so sums may differ in the last bits
    // (and so may everything computed from them).
    let reassociated = on_backend == On::Legion && plan.reduces();
    let same = |a: &[f64], b: &[f64]| {
        if reassociated {
            close(a, b)
        } else {
            bits(a) == bits(b)
        }
    };
    let off = run_real(&plan, FusionConfig::off(), None, None, on_backend)
        .map_err(TestCaseError::fail)?;
    let on = run_real(
        &plan,
        fused(plan.window),
        plan.strip_bytes,
        jit.cloned(),
        on_backend,
    )
    .map_err(TestCaseError::fail)?;

    // Fusion off executes every task as submitted, fusion on at most as many.
    prop_assert_eq!(off.executed, off.submitted, "fusion off fused something");
    prop_assert!(off.log.is_empty(), "fusion off buffered: {:?}", off.log);
    prop_assert_eq!(on.submitted, off.submitted);
    prop_assert!(on.executed <= on.submitted);
    // The fused run's log accounts for every task: issued == submitted, and the constituents
    // of what executed are exactly what was issued, flush by flush.
    let issued: usize = on.log.iter().map(|r| r.issued.len()).sum();
    prop_assert_eq!(issued as u64, on.submitted, "log: {:?}", on.log);
    for record in &on.log {
        let constituents: Vec<String> = executed_groups(std::slice::from_ref(record))
            .into_iter()
            .flat_map(|(names, _)| names)
            .collect();
        prop_assert_eq!(&constituents, &record.issued, "flush record {:?}", record);
    }
    let groups = executed_groups(&on.log);
    prop_assert_eq!(groups.len() as u64, on.executed, "log: {:?}", on.log);
    let compiled: u64 = on.fused.iter().map(|f| f.compiled_points).sum();
    prop_assert!(
        jit.is_some() || compiled == 0,
        "compiled code ran without a JIT"
    );

    for (k, ((m, o), f)) in model
        .reads
        .iter()
        .zip(&off.reads)
        .zip(&on.reads)
        .enumerate()
    {
        prop_assert!(
            same(o, m),
            "read {}: fusion off {:?} vs model {:?}",
            k,
            o,
            m
        );
        prop_assert!(same(f, o), "read {}: fusion on {:?} vs off {:?}", k, f, o);
    }
    for (s, ((m, o), f)) in model
        .finals
        .iter()
        .zip(&off.finals)
        .zip(&on.finals)
        .enumerate()
    {
        let (Some(m), Some(o), Some(f)) = (m, o, f) else {
            prop_assert!(m.is_none() && o.is_none() && f.is_none(), "store {}", s);
            continue;
        };
        prop_assert!(
            same(o, m),
            "store {} (shape {:?}): fusion off {:?} vs sequential model {:?}",
            s,
            &plan.stores[s].shape,
            o,
            m
        );
        prop_assert!(
            same(f, o),
            "store {} (shape {:?}): fusion on (window {:?}, strip_bytes {:?}, JIT {}) {:?} vs \
             off {:?}; executed {:?}",
            s,
            &plan.stores[s].shape,
            plan.window,
            plan.strip_bytes,
            if jit.is_some() { "on" } else { "off" },
            f,
            o,
            on.log.iter().map(|r| &r.executed).collect::<Vec<_>>()
        );
    }

    bump(&cov.cases, 1);
    cov.submitted.set(cov.submitted.get() + on.submitted);
    cov.executed.set(cov.executed.get() + on.executed);
    for (names, temps) in &groups {
        bump(&cov.fused_groups, usize::from(names.len() > 1));
        bump(&cov.groups_with_temporaries, usize::from(*temps > 0));
        bump(&cov.temporaries, *temps);
        let reduces = names
            .iter()
            .any(|n| n.ends_with("sum_all") || n.ends_with("add_reduce") || n.ends_with("row_sum"));
        bump(
            &cov.fused_reductions,
            usize::from(names.len() > 1 && reduces),
        );
    }
    bump(&cov.strip_cases, usize::from(on.strip_points > 0));
    let temporaries = groups.iter().any(|(_, t)| *t > 0);
    bump(
        &cov.strip_temporary_cases,
        usize::from(on.strip_points > 0 && temporaries),
    );
    bump(&cov.replay_cases, usize::from(on.replayed > 0));
    bump(&cov.adaptive_cases, usize::from(plan.window.is_none()));
    bump(&cov.mid_reads, model.reads.len());
    bump(&cov.fused_tasks, on.fused.len());
    for f in on.fused.iter().filter(|f| f.compiled_points > 0) {
        bump(&cov.compiled_tasks, 1);
        bump(
            &cov.compiled_with_temporaries,
            usize::from(f.temporaries > 0),
        );
        bump(&cov.compiled_reductions, usize::from(f.reduces));
    }
    cov.compiled_points
        .set(cov.compiled_points.get() + compiled);
    bump(&cov.compiled_cases, usize::from(compiled > 0));
    Ok(())
}

/// A case count from the environment variable `var`, or `default`.
pub(crate) fn cases_from_env(var: &str, default: u32) -> u32 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// Runs `cases` random streams through [`check_case`] (fused tasks through `jit` when
/// given), prints the coverage, checks that every case ran and that the streams exercise
/// what fusion is about, and returns the coverage for further checks. The streams are
/// random unless `DIFFUSE_PROPERTY_SEED` fixes the seed (the ranks of a multi-process run
/// must all generate the same streams).
pub(crate) fn run_property(cases: u32, jit: Option<&Arc<Jit>>, on: On) -> Coverage {
    let seed = std::env::var("DIFFUSE_PROPERTY_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok());
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        rng_seed: seed.map_or(RngSeed::Random, RngSeed::Fixed),
        ..Config::default()
    });
    let cov = Coverage::default();
    if let Err(e) = runner.run(&raw_case(), |raw| check_case(&raw, &cov, jit, on)) {
        panic!("{e}");
    }
    let n = cov.cases.get();
    eprintln!(
        "fusion property (JIT {}): {n} cases, {} tasks submitted, {} executed with fusion on; \
         {} fused groups, {} with temporaries ({} temporaries), {} fused reductions; strips \
         in {} cases ({} with temporaries); memoized plans replayed in {} cases; {} \
         adaptive-window cases; {} mid-stream reads; {} fused tasks, {} ran compiled code \
         ({} with temporaries, {} with reductions; {} point tasks) in {} cases",
        if jit.is_some() { "on" } else { "off" },
        cov.submitted.get(),
        cov.executed.get(),
        cov.fused_groups.get(),
        cov.groups_with_temporaries.get(),
        cov.temporaries.get(),
        cov.fused_reductions.get(),
        cov.strip_cases.get(),
        cov.strip_temporary_cases.get(),
        cov.replay_cases.get(),
        cov.adaptive_cases.get(),
        cov.mid_reads.get(),
        cov.fused_tasks.get(),
        cov.compiled_tasks.get(),
        cov.compiled_with_temporaries.get(),
        cov.compiled_reductions.get(),
        cov.compiled_points.get(),
        cov.compiled_cases.get(),
    );
    assert!(n >= cases as usize, "only {n} cases ran");
    // The streams must exercise what the property is about, in a fair share of the cases.
    cov.share("fused groups", cov.fused_groups.get(), 0.5);
    cov.share(
        "fused groups with temporaries",
        cov.groups_with_temporaries.get(),
        0.1,
    );
    cov.share(
        "fused groups with reductions",
        cov.fused_reductions.get(),
        0.05,
    );
    cov.share(
        "cases replaying memoized plans",
        cov.replay_cases.get(),
        0.05,
    );
    cov.share("adaptive-window cases", cov.adaptive_cases.get(), 0.05);
    cov.share("mid-stream reads", cov.mid_reads.get(), 0.2);
    assert!(
        cov.executed.get() * 10 <= cov.submitted.get() * 9,
        "fusion saved too little: {} of {} tasks executed",
        cov.executed.get(),
        cov.submitted.get()
    );
    cov
}

/// The differential property on the native fused path.
#[test]
fn fused_streams_match_unfused_and_sequential() {
    let cov = run_property(
        cases_from_env("DIFFUSE_FUSION_CASES", 3000),
        None,
        On::Embedded,
    );
    // Without a JIT, fused element-wise points run strip by strip when strips are small.
    cov.share("cases with strips", cov.strip_cases.get(), 0.05);
    cov.share(
        "cases with strips and temporaries",
        cov.strip_temporary_cases.get(),
        0.03,
    );
}

/// Random streams of the JIT property by default: compiling a new fused signature takes about
/// 0.1 s here, and the random streams produce two or three new ones per case.
const JIT_CASES: u32 = 80;

/// The differential property with fused tasks running JIT-compiled kernels.
#[test]
fn jit_fused_streams_match_unfused_and_sequential() {
    let jit = Arc::new(Jit::new());
    let cov = run_property(
        cases_from_env("DIFFUSE_JIT_CASES", JIT_CASES),
        Some(&jit),
        On::Embedded,
    );
    let stats = jit.stats();
    eprintln!("JIT: {stats:?}");
    // Most fused tasks run compiled code (the others have a point whose sub-stores do not
    // fit the compiled kernel, or reduce into a store they also access otherwise).
    cov.share("cases running compiled code", cov.compiled_cases.get(), 0.3);
    assert!(
        cov.compiled_tasks.get() * 2 >= cov.fused_tasks.get(),
        "only {} of {} fused tasks ran compiled code",
        cov.compiled_tasks.get(),
        cov.fused_tasks.get()
    );
    cov.share(
        "compiled fused tasks with temporaries",
        cov.compiled_with_temporaries.get(),
        0.1,
    );
    cov.share(
        "compiled fused tasks with reductions",
        cov.compiled_reductions.get(),
        0.05,
    );
    assert!(
        stats.kernels_compiled as usize >= cov.cases.get() / 4,
        "only {} kernels compiled in {} cases",
        stats.kernels_compiled,
        cov.cases.get()
    );
}

// ---------------------------------------------------------------------------------------------
// Figure 2: the 5-point stencil.
// ---------------------------------------------------------------------------------------------

/// The five aliasing views of an (n+2)^2 grid: center, north, east, west, south.
fn stencil_views(grid: &Store, n: i64) -> [View; 5] {
    let v = |r: i64, c: i64| {
        View::new(
            grid,
            Tuple::new(&[r, c]).unwrap(),
            Tuple::shape(&[n, n]).unwrap(),
        )
        .unwrap()
    };
    [v(1, 1), v(0, 1), v(1, 2), v(1, 0), v(2, 1)]
}

/// One iteration of Figure 2(a), lines 10-14, as the IR tasks of Figure 2(c):
/// `avg = center + north + east + west + south` (four ADDs, each into a fresh store whose
/// handle goes as soon as the next task consumed it), `work = 0.2 * avg` (MULT), and
/// `center[:] = work` (COPY).
fn stencil_iteration(c: &Context, grid: &Store, n: i64, launch: &[i64]) {
    stencil_iteration_adding_with(c, grid, n, launch, &ew_add_kind());
}

/// [`stencil_iteration`] with its four additions of kind `add_kind`.
fn stencil_iteration_adding_with(
    c: &Context,
    grid: &Store,
    n: i64,
    launch: &[i64],
    add_kind: &Arc<TaskKind>,
) {
    let launch = Tuple::shape(launch).unwrap();
    let [center, north, east, west, south] = stencil_views(grid, n);
    let part = |v: &View| v.blocked(launch).unwrap();
    let fresh = || whole(c, &[n, n]);
    let add = |out: &Store, a: &View, b: &View| {
        c.submit(
            IndexTask::new(add_kind, launch)
                .arg(out, part(&out.view()), Privilege::Write)
                .arg(a.store(), part(a), Privilege::Read)
                .arg(b.store(), part(b), Privilege::Read),
        )
        .unwrap();
    };
    let t1 = fresh();
    add(&t1, &center, &north);
    let t2 = fresh();
    add(&t2, &t1.view(), &east);
    drop(t1);
    let t3 = fresh();
    add(&t3, &t2.view(), &west);
    drop(t2);
    let t4 = fresh();
    add(&t4, &t3.view(), &south);
    drop(t3);
    let work = fresh();
    c.submit(
        IndexTask::new(&ew_scale_kind(), launch)
            .arg(&work, part(&work.view()), Privilege::Write)
            .arg(&t4, part(&t4.view()), Privilege::Read)
            .scalar(0.2),
    )
    .unwrap();
    drop(t4);
    c.submit(
        IndexTask::new(&ew_copy_kind(), launch)
            .arg(grid, part(&center), Privilege::Write)
            .arg(&work, part(&work.view()), Privilege::Read),
    )
    .unwrap();
    drop(work);
}

fn stencil_init(n: i64) -> Vec<f64> {
    random_data(((n + 2) * (n + 2)) as usize, 2024)
}

/// The sequential model of `iters` stencil iterations, in the kernels' arithmetic order.
fn stencil_model(n: i64, iters: usize) -> Vec<f64> {
    let m = (n + 2) as usize;
    let mut g = stencil_init(n);
    for _ in 0..iters {
        let mut work = vec![0.0; (n * n) as usize];
        for i in 1..=n as usize {
            for j in 1..=n as usize {
                let avg = g[i * m + j]
                    + g[(i - 1) * m + j]
                    + g[i * m + j + 1]
                    + g[i * m + j - 1]
                    + g[(i + 1) * m + j];
                work[(i - 1) * n as usize + j - 1] = 0.2 * avg;
            }
        }
        for i in 1..=n as usize {
            for j in 1..=n as usize {
                g[i * m + j] = work[(i - 1) * n as usize + j - 1];
            }
        }
    }
    g
}

/// Runs `iters` stencil iterations; returns the grid and the rig.
fn run_stencil(
    n: i64,
    iters: usize,
    fusion: FusionConfig,
    strip_bytes: Option<usize>,
    jit: Option<Arc<Jit>>,
) -> (Vec<f64>, Rig) {
    run_stencil_adding_with(n, iters, fusion, strip_bytes, jit, &ew_add_kind())
}

/// [`run_stencil`] with the additions of kind `add_kind`.
fn run_stencil_adding_with(
    n: i64,
    iters: usize,
    fusion: FusionConfig,
    strip_bytes: Option<usize>,
    jit: Option<Arc<Jit>>,
    add_kind: &Arc<TaskKind>,
) -> (Vec<f64>, Rig) {
    let r = rig(2, fusion, strip_bytes, jit);
    r.runtime.record_streams(true);
    let grid = r
        .ctx
        .store_from_vec(&[n + 2, n + 2], stencil_init(n))
        .unwrap();
    for _ in 0..iters {
        stencil_iteration_adding_with(&r.ctx, &grid, n, &[2, 2], add_kind);
    }
    r.ctx.flush_window().unwrap();
    let out = r.ctx.read::<f64>(&grid.view()).unwrap();
    (out, r)
}

#[test]
fn stencil_runs_two_tasks_per_iteration_with_four_temporaries() {
    let (n, iters) = (12, 6);
    let want = stencil_model(n, iters);
    let (off, off_rig) = run_stencil(n, iters, FusionConfig::off(), None, None);
    assert_eq!(
        bits(&off),
        bits(&want),
        "fusion off vs the sequential model"
    );
    assert_eq!(off_rig.backend.stats().tasks_executed, 6 * iters as u64);
    let fused_name = [
        ew_add_kind(),
        ew_add_kind(),
        ew_add_kind(),
        ew_add_kind(),
        ew_scale_kind(),
    ]
    .iter()
    .map(|k| k.name().to_string())
    .collect::<Vec<_>>()
    .join("+");
    for window in [Some(6), Some(7), Some(12), None] {
        let (on, r) = run_stencil(n, iters, fused(window), None, None);
        assert_eq!(bits(&on), bits(&off), "window {window:?}: fusion on vs off");
        assert_eq!(r.ctx.tasks_submitted(), 6 * iters as u64);
        assert_eq!(
            r.backend.stats().tasks_executed,
            2 * iters as u64,
            "window {window:?}: executed {:?}",
            r.runtime.take_stream_log()
        );
        let log = r.runtime.take_stream_log();
        let executed: Vec<&String> = log.iter().flat_map(|f| &f.executed).collect();
        let five = format!("{fused_name} (temporaries: 4)");
        let copy = ew_copy_kind().name().to_string();
        assert_eq!(
            executed.iter().filter(|e| ***e == five).count(),
            iters,
            "window {window:?}: {executed:?}"
        );
        assert_eq!(
            executed.iter().filter(|e| ***e == copy).count(),
            iters,
            "window {window:?}: {executed:?}"
        );
        assert_eq!(executed.len(), 2 * iters, "window {window:?}: {executed:?}");
        if window == Some(6) {
            // Every window after the first two is isomorphic to one already planned.
            let stats = r.runtime.planner_stats();
            assert!(stats.replayed > 0, "window 6: {stats:?}");
        }
        // The default strip size holds a whole 6x6 sub-store: no point is cut into strips.
        assert_eq!(r.backend.stats().strip_points, 0, "window {window:?}");
    }
}

#[test]
fn stencil_in_strips_matches_unfused() {
    let (n, iters) = (16, 4);
    let (off, _) = run_stencil(n, iters, FusionConfig::off(), None, None);
    assert_eq!(bits(&off), bits(&stencil_model(n, iters)));
    for strip_bytes in [8, 64, 256] {
        let (on, r) = run_stencil(n, iters, fused(Some(6)), Some(strip_bytes), None);
        assert!(
            r.backend.stats().strip_points > 0,
            "strip_bytes {strip_bytes}: no point ran in strips"
        );
        assert_eq!(r.backend.stats().tasks_executed, 2 * iters as u64);
        assert_eq!(
            bits(&on),
            bits(&off),
            "strip_bytes {strip_bytes}: fusion on vs off"
        );
    }
}

#[test]
fn stencil_temporaries_are_never_allocated() {
    let (n, iters) = (32i64, 3);
    let peak = |fusion: FusionConfig| {
        let r = rig(2, fusion, None, None);
        let grid = r
            .ctx
            .store_from_vec(&[n + 2, n + 2], stencil_init(n))
            .unwrap();
        // Warm-up iteration, then measure steady state.
        stencil_iteration(&r.ctx, &grid, n, &[2, 2]);
        r.ctx.flush_window().unwrap();
        r.backend.reset_peak_memory();
        for _ in 0..iters {
            stencil_iteration(&r.ctx, &grid, n, &[2, 2]);
        }
        r.ctx.flush_window().unwrap();
        let out = r.ctx.read::<f64>(&grid.view()).unwrap();
        (r.backend.stats().peak_store_bytes as usize, out)
    };
    let (peak_off, off) = peak(FusionConfig::off());
    let (peak_on, on) = peak(fused(Some(6)));
    assert_eq!(bits(&on), bits(&off));
    let grid_bytes = ((n + 2) * (n + 2) * 8) as usize;
    let plane = (n * n * 8) as usize;
    // Fused: the grid and `work`, never an `avg` temporary. Unfused: at least two n x n
    // temporaries live at once (an ADD's input and output) on top of the grid.
    assert!(
        peak_on <= grid_bytes + plane,
        "fusion on: peak {peak_on} bytes, grid {grid_bytes} + work {plane}"
    );
    assert!(
        peak_off >= grid_bytes + 2 * plane,
        "fusion off: peak {peak_off}"
    );
    assert!(peak_on < peak_off, "peak on {peak_on} vs off {peak_off}");
}

// ---------------------------------------------------------------------------------------------
// Figure 8: distributed temporaries.
// ---------------------------------------------------------------------------------------------

struct Figure8 {
    v: Vec<f64>,
    norm: f64,
    peak: usize,
    executed: Vec<String>,
    tasks_executed: u64,
    temporaries: Vec<StoreId>,
    z: StoreId,
}

/// Figure 8(a): `x, y` live; `z = 2x; w = y + z; v = w * w; norm = sum(w[n/2:])`; then
/// `del x, y, z, w` and `flush_window()`; `v` and `norm` are kept.
fn figure8(fusion: FusionConfig) -> Figure8 {
    let n = 16i64;
    let r = rig(2, fusion, None, None);
    r.runtime.record_streams(true);
    let c = &r.ctx;
    let launch = Tuple::shape(&[4]).unwrap();
    let x = c.store_from_vec(&[n], random_data(n as usize, 8)).unwrap();
    let y = c.store_from_vec(&[n], random_data(n as usize, 9)).unwrap();
    let norm = c.store_from_vec(&[], vec![0.0f64]).unwrap();
    c.flush_window().unwrap();
    r.backend.reset_peak_memory();
    let part = |s: &Store| s.view().blocked(launch).unwrap();
    let (z, w, v) = (whole(c, &[n]), whole(c, &[n]), whole(c, &[n]));
    let upper = View::new(
        &w,
        Tuple::new(&[n / 2]).unwrap(),
        Tuple::shape(&[n / 2]).unwrap(),
    )
    .unwrap();
    let tasks = vec![
        IndexTask::new(&ew_scale_kind(), launch)
            .arg(&z, part(&z), Privilege::Write)
            .arg(&x, part(&x), Privilege::Read)
            .scalar(2.0),
        IndexTask::new(&ew_add_kind(), launch)
            .arg(&w, part(&w), Privilege::Write)
            .arg(&y, part(&y), Privilege::Read)
            .arg(&z, part(&z), Privilege::Read),
        IndexTask::new(&ew_mul_kind(), launch)
            .arg(&v, part(&v), Privilege::Write)
            .arg(&w, part(&w), Privilege::Read)
            .arg(&w, part(&w), Privilege::Read),
        IndexTask::new(&reduce_all_kind(ReductionOp::Sum), launch)
            .arg(&w, upper.blocked(launch).unwrap(), Privilege::Read)
            .arg(
                &norm,
                Partition::replicate(),
                Privilege::Reduce(ReductionOp::Sum),
            ),
    ];
    for t in &tasks {
        c.submit(t.clone()).unwrap();
    }
    let z_id = z.id();
    drop((x, y, z, w, upper));
    // What the planner decides for this window now that the handles are gone.
    let plan = diffuse_fusion::analyse(&tasks, &diffuse_fusion::HeldStores::of(&tasks));
    let temporaries = plan.groups.first().map(|g| g.temporaries.clone());
    drop(tasks);
    c.flush_window().unwrap();
    Figure8 {
        v: c.read::<f64>(&v.view()).unwrap(),
        norm: c.read_scalar::<f64>(&norm.view()).unwrap(),
        peak: r.backend.stats().peak_store_bytes as usize,
        executed: r
            .runtime
            .take_stream_log()
            .into_iter()
            .flat_map(|f| f.executed)
            .collect(),
        tasks_executed: r.backend.stats().tasks_executed,
        temporaries: temporaries.unwrap_or_default(),
        z: z_id,
    }
}

#[test]
fn figure8_fuses_three_tasks_and_only_z_is_temporary() {
    let off = figure8(FusionConfig::off());
    assert_eq!(off.tasks_executed, 4);
    // The sequential model.
    let n = 16usize;
    let (x, y) = (random_data(n, 8), random_data(n, 9));
    let w: Vec<f64> = x.iter().zip(&y).map(|(x, y)| y + 2.0 * x).collect();
    let v: Vec<f64> = w.iter().map(|w| w * w).collect();
    let norm = w[n / 2..]
        .chunks(2)
        .map(|b| b.iter().fold(-0.0, |a, x| a + x))
        .fold(0.0, |a, p| a + p);
    assert_eq!(bits(&off.v), bits(&v));
    assert_eq!(off.norm.to_bits(), norm.to_bits());

    for window in [Some(5), Some(8), None] {
        let on = figure8(fused(window));
        let fused_name = format!(
            "{}+{}+{} (temporaries: 1)",
            ew_scale_kind().name(),
            ew_add_kind().name(),
            ew_mul_kind().name()
        );
        assert_eq!(
            on.executed,
            vec![
                fused_name,
                reduce_all_kind(ReductionOp::Sum).name().to_string()
            ],
            "window {window:?}"
        );
        assert_eq!(on.tasks_executed, 2);
        assert_eq!(
            on.temporaries,
            vec![on.z],
            "temporaries of the fused prefix"
        );
        assert_eq!(bits(&on.v), bits(&off.v), "window {window:?}: v");
        assert_eq!(on.norm.to_bits(), off.norm.to_bits(), "window {window:?}");
        // z is never allocated: fusion on peaks exactly one n-vector below fusion off, where
        // x, y, z, w and v are live at once.
        assert_eq!(
            on.peak + n * 8,
            off.peak,
            "window {window:?}: peak on {} vs off {}",
            on.peak,
            off.peak
        );
    }
}

// ---------------------------------------------------------------------------------------------
// A reduction of a temporary inside a fused task.
// ---------------------------------------------------------------------------------------------

/// Values spanning ~30 orders of magnitude: their f64 sum depends on the order of additions.
fn wild(k: usize) -> f64 {
    (((k * 7919) % 13) as f64 - 6.0) * 10f64.powi((k * 31 % 33) as i32 - 16)
}

/// `t = a + b` (fresh, dropped), `acc += sum(t)` (through `t`'s own partition, so it fuses
/// with the producer and `t` is a temporary), `acc += sum(c)`: the fused task must fold its
/// constituents' contributions constituent by constituent, points in order, exactly as the
/// unfused tasks do, natively and compiled; with this data, interleaving the two reductions
/// point by point, or folding both into one accumulator per point, gives other bits.
#[test]
fn reductions_of_a_temporary_fold_in_point_order() {
    let n = 48usize;
    let a: Vec<f64> = (0..n).map(wild).collect();
    let b = random_data(n, 77);
    let cv: Vec<f64> = (0..n).map(|k| wild(k + 2)).collect();
    let run = |fusion: FusionConfig, jit: Option<Arc<Jit>>| {
        let r = rig(3, fusion, None, jit);
        r.runtime.record_streams(true);
        let c = &r.ctx;
        let launch = Tuple::shape(&[6]).unwrap();
        let xa = c.store_from_vec(&[n as i64], a.clone()).unwrap();
        let xb = c.store_from_vec(&[n as i64], b.clone()).unwrap();
        let xc = c.store_from_vec(&[n as i64], cv.clone()).unwrap();
        let acc = c.store_from_vec(&[], vec![0.125f64]).unwrap();
        let t = whole(c, &[n as i64]);
        let part = |s: &Store| s.view().blocked(launch).unwrap();
        c.submit(
            IndexTask::new(&add_kind(), launch)
                .arg(&t, part(&t), Privilege::Write)
                .arg(&xa, part(&xa), Privilege::Read)
                .arg(&xb, part(&xb), Privilege::Read),
        )
        .unwrap();
        for input in [&t, &xc] {
            c.submit(
                IndexTask::new(&reduce_all_kind(ReductionOp::Sum), launch)
                    .arg(input, part(input), Privilege::Read)
                    .arg(
                        &acc,
                        Partition::replicate(),
                        Privilege::Reduce(ReductionOp::Sum),
                    ),
            )
            .unwrap();
        }
        drop(t);
        c.flush_window().unwrap();
        let log: Vec<String> = r
            .runtime
            .take_stream_log()
            .into_iter()
            .flat_map(|f| f.executed)
            .collect();
        (
            c.read_scalar::<f64>(&acc.view()).unwrap(),
            log,
            r.backend.stats().compiled_points,
        )
    };
    // Per-point partial sums (blocks of 8, each folded from the identity -0.0).
    let partials = |v: &[f64]| -> Vec<f64> {
        v.chunks(8)
            .map(|blk| blk.iter().fold(-0.0, |s, x| s + x))
            .collect()
    };
    let t: Vec<f64> = a.iter().zip(&b).map(|(a, b)| a + b).collect();
    let (pt, pc) = (partials(&t), partials(&cv));
    let want = pc
        .iter()
        .fold(pt.iter().fold(0.125, |s, p| s + p), |s, p| s + p);
    let interleaved = pt.iter().zip(&pc).fold(0.125, |s, (p, q)| s + p + q);
    assert_ne!(
        want.to_bits(),
        interleaved.to_bits(),
        "data not order-sensitive"
    );
    // One accumulator per point for both reductions: each point folds its `t` block, then
    // its `c` block.
    let shared = t
        .chunks(8)
        .zip(cv.chunks(8))
        .map(|(bt, bc)| bt.iter().chain(bc).fold(-0.0, |s, x| s + x))
        .fold(0.125, |s, p| s + p);
    assert_ne!(want.to_bits(), shared.to_bits(), "data not order-sensitive");
    let (off, _, _) = run(FusionConfig::off(), None);
    assert_eq!(
        off.to_bits(),
        want.to_bits(),
        "fusion off: {off:e} vs {want:e}"
    );
    for (what, jit) in native_and_jit() {
        let compiles = jit.is_some();
        let (on, log, compiled) = run(fused(Some(8)), jit);
        assert_eq!(
            log,
            vec![format!(
                "{}+{}+{} (temporaries: 1)",
                add_kind().name(),
                reduce_all_kind(ReductionOp::Sum).name(),
                reduce_all_kind(ReductionOp::Sum).name()
            )],
            "{what}"
        );
        assert_eq!(compiled, if compiles { 6 } else { 0 }, "{what}");
        assert_eq!(
            on.to_bits(),
            want.to_bits(),
            "fusion on, {what}: {on:e} vs {want:e}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Faults inside a fused task.
// ---------------------------------------------------------------------------------------------

/// `t = x + x` (fresh), `u = fail_at(t)` (fresh), `v = u * u` (kept), all on 4 points and
/// buffered in one window; `t` and `u` dropped. Returns the flush's result and `v`'s handle.
fn faulty_chain(c: &Context, x: &Store, mask: i64, panics: bool) -> (Result<(), IrError>, Store) {
    let n = x.shape()[0];
    let launch = Tuple::shape(&[4]).unwrap();
    let part = |s: &Store| s.view().blocked(launch).unwrap();
    let (t, u, v) = (whole(c, &[n]), whole(c, &[n]), whole(c, &[n]));
    c.submit(
        IndexTask::new(&ew_add_kind(), launch)
            .arg(&t, part(&t), Privilege::Write)
            .arg(x, part(x), Privilege::Read)
            .arg(x, part(x), Privilege::Read),
    )
    .unwrap();
    c.submit(
        IndexTask::new(&fail_at_kind(), launch)
            .arg(&u, part(&u), Privilege::Write)
            .arg(&t, part(&t), Privilege::Read)
            .scalar(mask)
            .scalar(panics),
    )
    .unwrap();
    c.submit(
        IndexTask::new(&ew_mul_kind(), launch)
            .arg(&v, part(&v), Privilege::Write)
            .arg(&u, part(&u), Privilege::Read)
            .arg(&u, part(&u), Privilege::Read),
    )
    .unwrap();
    drop((t, u));
    (c.flush_window(), v)
}

#[test]
fn faults_inside_a_fused_task_surface_at_flush_and_the_context_survives() {
    let n = 16usize;
    let data = random_data(n, 5);
    let want: Vec<f64> = data.iter().map(|x| (x + x) * (x + x)).collect();
    let fused_name = format!(
        "{}+{}+{} (temporaries: 2)",
        ew_add_kind().name(),
        fail_at_kind().name(),
        ew_mul_kind().name()
    );
    for strip_bytes in [None, Some(8)] {
        for panics in [false, true] {
            let what = format!("strip_bytes {strip_bytes:?}, panics {panics}");
            let r = rig(2, fused(Some(8)), strip_bytes, None);
            r.runtime.record_streams(true);
            let c = &r.ctx;
            let x = c.store_from_vec(&[n as i64], data.clone()).unwrap();
            let (result, lost) = faulty_chain(c, &x, 1 << 2, panics);
            let err = result.expect_err(&what);
            let IrError::Kernel(k) = &err else {
                panic!("{what}: expected IrError::Kernel, got {err:?}");
            };
            assert_eq!(k.kind, fail_at_kind().name(), "{what}");
            assert_eq!(k.point.as_slice(), &[2], "{what}");
            let reason = if panics {
                "injected fused panic 2"
            } else {
                "injected fused failure 2"
            };
            assert!(k.reason.contains(reason), "{what}: {}", k.reason);
            let executed: Vec<String> = r
                .runtime
                .take_stream_log()
                .into_iter()
                .flat_map(|f| f.executed)
                .collect();
            // The fused task failed; its constituents ran again one by one to find the one
            // that fails (`mul` reads its lost result, so it does not run).
            assert_eq!(
                executed,
                vec![
                    fused_name.clone(),
                    ew_add_kind().name().to_string(),
                    fail_at_kind().name().to_string()
                ],
                "{what}: not fused, or not recovered"
            );
            // `v` depends on the failure: reading it reports the failure.
            let poisoned = c.read::<f64>(&lost.view()).expect_err(&what);
            let IrError::Poisoned { store, task, .. } = &poisoned else {
                panic!("{what}: expected IrError::Poisoned, got {poisoned:?}");
            };
            assert_eq!(
                (*store, task.as_str()),
                (lost.id(), fail_at_kind().name()),
                "{what}"
            );
            assert!(
                matches!(poisoned.root_cause(), IrError::Kernel(k) if k.point.as_slice() == [2])
            );
            assert!(poisoned.to_string().contains(reason), "{what}: {poisoned}");

            // The context still works: the same chain without the fault, and host copies.
            let (result, v) = faulty_chain(c, &x, 0, panics);
            result.unwrap_or_else(|e| panic!("{what}: clean chain failed: {e}"));
            assert_eq!(
                bits(&c.read::<f64>(&v.view()).unwrap()),
                bits(&want),
                "{what}"
            );
            c.write(&x.view(), vec![1.0; n]).unwrap();
            assert_eq!(c.read::<f64>(&x.view()).unwrap(), vec![1.0; n], "{what}");
            assert_eq!(
                r.backend.stats().strip_points > 0,
                strip_bytes.is_some(),
                "{what}: strips"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Fusion off.
// ---------------------------------------------------------------------------------------------

#[test]
fn fusion_off_executes_every_task_as_submitted() {
    let (n, iters) = (10, 5);
    let r = rig(2, FusionConfig::off(), Some(8), None);
    r.runtime.record_streams(true);
    let grid = r
        .ctx
        .store_from_vec(&[n + 2, n + 2], stencil_init(n))
        .unwrap();
    for i in 0..iters {
        stencil_iteration(&r.ctx, &grid, n, &[2, 2]);
        // Nothing is buffered: every task has run by the time it was submitted.
        assert_eq!(r.backend.stats().tasks_executed, r.ctx.tasks_submitted());
        assert_eq!(r.ctx.tasks_submitted(), 6 * (i as u64 + 1));
    }
    r.ctx.flush_window().unwrap();
    assert_eq!(r.backend.stats().tasks_executed, 6 * iters as u64);
    assert_eq!(
        r.backend.stats().strip_points,
        0,
        "unfused tasks never run in strips"
    );
    assert!(r.runtime.take_stream_log().is_empty());
    assert_eq!(r.runtime.planner_stats().analysed, 0);
    assert_eq!(
        bits(&r.ctx.read::<f64>(&grid.view()).unwrap()),
        bits(&stencil_model(n, iters))
    );
}

// ---------------------------------------------------------------------------------------------
// The adaptive window.
// ---------------------------------------------------------------------------------------------

/// A long chain that fuses entirely: each full window is one group, so the adaptive window
/// doubles and keeps buffering (16 -> 32 -> 64): the 40 tasks execute as one fused task. A
/// chain longer than the largest window runs in windows of [`ADAPTIVE_MAX`] tasks.
#[test]
fn adaptive_window_grows_on_a_long_fusible_chain() {
    let n = 12usize;
    let r = rig(2, fused(None), None, None);
    assert_eq!(r.runtime.window_size(), diffuse::runtime::ADAPTIVE_START);
    let c = &r.ctx;
    let launch = Tuple::shape(&[3]).unwrap();
    let x = c.store_from_vec(&[n as i64], vec![0.5f64; n]).unwrap();
    let y = c.store_from_vec(&[n as i64], random_data(n, 3)).unwrap();
    let part = |s: &Store| s.view().blocked(launch).unwrap();
    for _ in 0..40 {
        c.submit(
            IndexTask::new(&ew_add_assign_kind(), launch)
                .arg(&x, part(&x), Privilege::ReadWrite)
                .arg(&y, part(&y), Privilege::Read),
        )
        .unwrap();
    }
    c.flush_window().unwrap();
    assert_eq!(
        r.runtime.window_size(),
        4 * diffuse::runtime::ADAPTIVE_START
    );
    assert_eq!(r.backend.stats().tasks_executed, 1);
    let want: Vec<f64> = random_data(n, 3)
        .iter()
        .map(|y| (0..40).fold(0.5, |x, _| x + y))
        .collect();
    assert_eq!(bits(&c.read::<f64>(&x.view()).unwrap()), bits(&want));

    // 600 more: two full windows of ADAPTIVE_MAX run as the window fills, the rest at the
    // flush.
    let max = diffuse::runtime::ADAPTIVE_MAX;
    for _ in 0..600 {
        c.submit(
            IndexTask::new(&ew_add_assign_kind(), launch)
                .arg(&x, part(&x), Privilege::ReadWrite)
                .arg(&y, part(&y), Privilege::Read),
        )
        .unwrap();
    }
    assert_eq!(r.runtime.window_size(), max);
    assert_eq!(r.backend.stats().tasks_executed, 1 + (600 / max) as u64);
    c.flush_window().unwrap();
    assert_eq!(r.backend.stats().tasks_executed, 2 + (600 / max) as u64);
    let want: Vec<f64> = random_data(n, 3)
        .iter()
        .map(|y| (0..640).fold(0.5, |x, _| x + y))
        .collect();
    assert_eq!(bits(&c.read::<f64>(&x.view()).unwrap()), bits(&want));
}

// ---------------------------------------------------------------------------------------------
// The JIT: fused tasks whose constituents all have MLIR generators run compiled kernels.
// ---------------------------------------------------------------------------------------------

/// The stencil's fused task (four ADDs and the MULT, four temporaries) runs as one compiled
/// kernel, compiled once for all iterations, and computes the unfused grid bit for bit.
#[test]
fn stencil_runs_compiled_and_matches_unfused() {
    let (n, iters) = (12, 5);
    let (off, _) = run_stencil(n, iters, FusionConfig::off(), None, None);
    let jit = Arc::new(Jit::new());
    let (on, r) = run_stencil(n, iters, fused(Some(6)), None, Some(jit.clone()));
    assert_eq!(bits(&on), bits(&off), "JIT on vs fusion off");
    assert_eq!(r.backend.stats().tasks_executed, 2 * iters as u64);
    let runs = r.observed.take_fused();
    assert_eq!(runs.len(), iters, "one fused task per iteration");
    for (i, run) in runs.iter().enumerate() {
        assert_eq!(run.temporaries, 4, "iteration {i}");
        assert_eq!(
            run.compiled_points, 4,
            "iteration {i}: every point of the 2x2 launch"
        );
    }
    assert_eq!(r.backend.stats().compiled_points, 4 * iters as u64);
    let stats = jit.stats();
    assert_eq!(
        (stats.kernels_compiled, stats.compile_failures),
        (1, 0),
        "{stats:?}"
    );
}

/// Element-wise `out = a + b` whose MLIR generator emits an operation MLIR does not know:
/// every kernel with it fails to compile.
fn broken_add_kind() -> Arc<TaskKind> {
    static K: OnceLock<Arc<TaskKind>> = OnceLock::new();
    const BROKEN_ADD: Arith = Arith {
        native: |_, a, b| a + b,
        mlir: "%r = arith.no_such_operation %x0, %x1 : {T}\nlinalg.yield %r : {T}",
        scaled: false,
    };
    binary_kind(&K, "fusion.broken_add", true, BROKEN_ADD)
}

/// A kernel that fails to compile leaves its fused task on the native path, with the same
/// results; the failure is counted (and logged) once per signature, however often the fused
/// task runs and in however many runtimes.
#[test]
fn a_compile_failure_falls_back_to_native_kernels() {
    let (n, iters) = (12, 4);
    let (off, _) = run_stencil(n, iters, FusionConfig::off(), None, None);
    let jit = Arc::new(Jit::new());
    for runtime in 0..2 {
        let (on, r) = run_stencil_adding_with(
            n,
            iters,
            fused(Some(6)),
            None,
            Some(jit.clone()),
            &broken_add_kind(),
        );
        assert_eq!(
            bits(&on),
            bits(&off),
            "runtime {runtime}: JIT on vs fusion off"
        );
        let runs = r.observed.take_fused();
        assert_eq!(runs.len(), iters, "runtime {runtime}: fused tasks");
        assert_eq!(r.backend.stats().compiled_points, 0, "runtime {runtime}");
        let stats = jit.stats();
        assert_eq!(
            (stats.kernels_compiled, stats.compile_failures),
            (0, 1),
            "runtime {runtime}: {stats:?}"
        );
    }
}

/// `acc += sum(a)`, `acc += sum(c)` fused into one task over one point, with data whose
/// total depends on the order of additions: the compiled task must fold constituent by
/// constituent, as the unfused tasks and the native fused path do
/// (`(acc + sum(a)) + sum(c)`), not run both reductions through one accumulator
/// (`acc + ((sum(a) + c0) + c1)`).
#[test]
fn two_reductions_into_one_store_fold_constituent_by_constituent() {
    let run = |fusion: FusionConfig, jit: Option<Arc<Jit>>| {
        let r = rig(1, fusion, None, jit);
        let c = &r.ctx;
        let launch = Tuple::shape(&[1]).unwrap();
        let a = c.store_from_vec(&[1], vec![1e16]).unwrap();
        let b = c.store_from_vec(&[2], vec![1.0, 1.0]).unwrap();
        let acc = c.store_from_vec(&[], vec![0.0f64]).unwrap();
        for input in [&a, &b] {
            c.submit(
                IndexTask::new(&reduce_all_kind(ReductionOp::Sum), launch)
                    .arg(
                        input,
                        input.view().blocked(launch).unwrap(),
                        Privilege::Read,
                    )
                    .arg(
                        &acc,
                        Partition::replicate(),
                        Privilege::Reduce(ReductionOp::Sum),
                    ),
            )
            .unwrap();
        }
        c.flush_window().unwrap();
        let total = c.read_scalar::<f64>(&acc.view()).unwrap();
        (
            total,
            r.backend.stats().tasks_executed,
            r.backend.stats().compiled_points,
        )
    };
    let want = 1e16f64 + 2.0;
    assert_ne!(((1e16f64 + 1.0) + 1.0).to_bits(), want.to_bits());
    assert_eq!(run(FusionConfig::off(), None), (want, 2, 0), "fusion off");
    for (what, jit) in native_and_jit() {
        let compiled = u64::from(jit.is_some());
        assert_eq!(run(fused(Some(4)), jit), (want, 1, compiled), "{what}");
    }
}

/// `t = a + a` (a temporary), `a = b * b`, `d = t * t` in one fused task: `d` must see the
/// `a` of before the overwrite, also when the compiled kernel fuses the loops (the read of
/// `a` then moves into `d`'s loop, after `a`'s).
#[test]
fn a_store_overwritten_after_a_read_in_a_fused_task_keeps_the_read_value() {
    let n = 8usize;
    let (x, y) = (random_data(n, 11), random_data(n, 12));
    let want: Vec<f64> = x.iter().map(|v| (v + v) * (v + v)).collect();
    for (what, jit) in native_and_jit() {
        let compiles = jit.is_some();
        let r = rig(2, fused(Some(8)), None, jit);
        let c = &r.ctx;
        let launch = Tuple::shape(&[2]).unwrap();
        let part = |s: &Store| s.view().blocked(launch).unwrap();
        let a = c.store_from_vec(&[n as i64], x.clone()).unwrap();
        let b = c.store_from_vec(&[n as i64], y.clone()).unwrap();
        let (t, d) = (whole(c, &[n as i64]), whole(c, &[n as i64]));
        let binary = |kind: &Arc<TaskKind>, out: &Store, lhs: &Store, rhs: &Store| {
            c.submit(
                IndexTask::new(kind, launch)
                    .arg(out, part(out), Privilege::Write)
                    .arg(lhs, part(lhs), Privilege::Read)
                    .arg(rhs, part(rhs), Privilege::Read),
            )
            .unwrap();
        };
        binary(&ew_add_kind(), &t, &a, &a);
        binary(&ew_mul_kind(), &a, &b, &b);
        binary(&ew_mul_kind(), &d, &t, &t);
        drop(t);
        c.flush_window().unwrap();
        assert_eq!(r.backend.stats().tasks_executed, 1, "{what}: not fused");
        assert_eq!(
            r.backend.stats().compiled_points,
            if compiles { 2 } else { 0 },
            "{what}"
        );
        assert_eq!(
            bits(&c.read::<f64>(&d.view()).unwrap()),
            bits(&want),
            "{what}: d"
        );
        let squares: Vec<f64> = y.iter().map(|v| v * v).collect();
        assert_eq!(
            bits(&c.read::<f64>(&a.view()).unwrap()),
            bits(&squares),
            "{what}: a"
        );
    }
}

/// `t = a + row` (`row` a `1 x n` store whose column blocks every point row reads, broadcast
/// down the rows; `t` a temporary), `out = t * t`: the compiled kernel broadcasts `row`
/// through its unit dimension and computes what the native path and the model compute.
#[test]
fn a_broadcast_row_runs_compiled() {
    let (m, n) = (6i64, 8i64);
    let (x, y) = (
        random_data((m * n) as usize, 21),
        random_data(n as usize, 22),
    );
    let want: Vec<f64> = (0..(m * n) as usize)
        .map(|k| {
            let v = x[k] + y[k % n as usize];
            v * v
        })
        .collect();
    for (what, jit) in native_and_jit() {
        let compiles = jit.is_some();
        let r = rig(2, fused(Some(4)), None, jit);
        let c = &r.ctx;
        let launch = Tuple::shape(&[2, 2]).unwrap();
        let part = |s: &Store| s.view().blocked(launch).unwrap();
        let a = c.store_from_vec(&[m, n], x.clone()).unwrap();
        let row = c.store_from_vec(&[1, n], y.clone()).unwrap();
        let columns = Partition::tiling(
            Tuple::shape(&[1, n / 2]).unwrap(),
            Tuple::new(&[0, 0]).unwrap(),
            Projection::new(2, &[ProjComponent::Const(0), ProjComponent::Dim(1)]).unwrap(),
        )
        .unwrap();
        let (t, out) = (whole(c, &[m, n]), whole(c, &[m, n]));
        c.submit(
            IndexTask::new(&ew_add_row_kind(), launch)
                .arg(&t, part(&t), Privilege::Write)
                .arg(&a, part(&a), Privilege::Read)
                .arg(&row, columns, Privilege::Read),
        )
        .unwrap();
        c.submit(
            IndexTask::new(&ew_mul_kind(), launch)
                .arg(&out, part(&out), Privilege::Write)
                .arg(&t, part(&t), Privilege::Read)
                .arg(&t, part(&t), Privilege::Read),
        )
        .unwrap();
        drop(t);
        c.flush_window().unwrap();
        let runs = r.observed.take_fused();
        assert_eq!(runs.len(), 1, "{what}: not fused");
        assert_eq!(runs[0].temporaries, 1, "{what}");
        assert_eq!(
            runs[0].compiled_points,
            if compiles { 4 } else { 0 },
            "{what}"
        );
        assert_eq!(
            bits(&c.read::<f64>(&out.view()).unwrap()),
            bits(&want),
            "{what}"
        );
    }
}

/// Whole reductions by every operator, each into its own 0-d store, fused into one compiled
/// task, agree bit for bit with the native fused path on data where the operators' corner
/// cases show: `min` and `max` keep the first of equal values (`0.0` then `-0.0` gives
/// `0.0`), NaN wins.
#[test]
fn reductions_by_every_operator_run_compiled() {
    const OPS: [ReductionOp; 4] = [
        ReductionOp::Sum,
        ReductionOp::Prod,
        ReductionOp::Min,
        ReductionOp::Max,
    ];
    let zeros = [0.0, -0.0, 2.0, 3.0, -0.0, 0.0, 1.0, 5.0];
    let negated = zeros.map(|v: f64| -v);
    let nan = [
        1.0,
        f64::NAN,
        -0.0,
        f64::INFINITY,
        0.0,
        3.0,
        -2.0,
        f64::NEG_INFINITY,
    ];
    // (data, the stores' initial value, the operator whose result's sign tells the fold).
    let cases = [
        (zeros, 1.0, Some((ReductionOp::Min, 0.0f64))),
        (negated, -1.0, Some((ReductionOp::Max, -0.0))),
        (nan, 1.0, None),
    ];
    for (data, init, signed_zero) in cases {
        let mut results = Vec::new();
        for (what, jit) in native_and_jit() {
            let compiles = jit.is_some();
            let r = rig(2, fused(Some(8)), None, jit);
            let c = &r.ctx;
            let launch = Tuple::shape(&[2]).unwrap();
            let x = c.store_from_vec(&[8], data.to_vec()).unwrap();
            let accs: Vec<Store> = OPS
                .iter()
                .map(|_| c.store_from_vec(&[], vec![init]).unwrap())
                .collect();
            for (op, acc) in OPS.into_iter().zip(&accs) {
                c.submit(
                    IndexTask::new(&reduce_all_kind(op), launch)
                        .arg(&x, x.view().blocked(launch).unwrap(), Privilege::Read)
                        .arg(acc, Partition::replicate(), Privilege::Reduce(op)),
                )
                .unwrap();
            }
            c.flush_window().unwrap();
            assert_eq!(r.backend.stats().tasks_executed, 1, "{what}: not fused");
            // With NaN and infinities the product raises a real floating-point exception;
            // such a fused point runs again natively so that the report names the operation
            // (see `PointRunner::run`), so only the other cases keep compiled points.
            let raised = !r.backend.take_fp_errors().is_empty();
            assert_eq!(raised, signed_zero.is_none(), "{what}: exceptions");
            assert_eq!(
                r.backend.stats().compiled_points,
                if compiles && !raised { 2 } else { 0 },
                "{what}"
            );
            let totals: Vec<f64> = accs
                .iter()
                .map(|a| c.read_scalar::<f64>(&a.view()).unwrap())
                .collect();
            results.push(bits(&totals));
        }
        assert_eq!(results[0], results[1], "{data:?}: JIT off vs on");
        if let Some((op, want)) = signed_zero {
            let i = OPS.iter().position(|&o| o == op).unwrap();
            assert_eq!(results[0][i], want.to_bits(), "{data:?}: {op:?}");
        } else {
            assert!(results[0].iter().all(|&b| b == f64::NAN.to_bits()));
        }
    }
}
