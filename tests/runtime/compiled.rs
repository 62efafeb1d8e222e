//! Fused tasks whose constituents all have MLIR generators run JIT-compiled kernels: a compile
//! failure falls back to native kernels (counted once per signature), a broadcast row (unit
//! dimensions) and reductions by every operator (signed zeros, NaN) run compiled, and two
//! regressions: two reductions into one store fold constituent by constituent, and a store
//! overwritten after a constituent read it keeps the read value.

use std::sync::Arc;

use crate::common::fusion::*;
use crate::common::submit_blocked;
use crate::common::submit_sum_all;
use crate::stencil::*;
use diffuse::FusionConfig;
use diffuse_ir::{
    IndexTask, Partition, Privilege, ProjComponent, Projection, ReductionOp, Store, TaskKind, Tuple,
};
use diffuse_jit::Jit;

use crate::common::{binary_kind, reduce_all_kind, Arith};

// ---------------------------------------------------------------------------------------------
// The JIT: fused tasks whose constituents all have MLIR generators run compiled kernels.
// ---------------------------------------------------------------------------------------------

/// Element-wise `out = a + b` whose MLIR generator emits an operation MLIR does not know:
/// every kernel with it fails to compile.
fn broken_add_kind() -> Arc<TaskKind> {
    const BROKEN_ADD: Arith = Arith {
        native: |_, a, b| a + b,
        mlir: "%r = arith.no_such_operation %x0, %x1 : {T}\nlinalg.yield %r : {T}",
        scaled: false,
    };
    binary_kind("fusion.broken_add", true, BROKEN_ADD)
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
            submit_sum_all(c, input, &acc, launch).unwrap();
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
        assert_holds(c, &d, &want, &format!("{what}: d"));
        let squares: Vec<f64> = y.iter().map(|v| v * v).collect();
        assert_holds(c, &a, &squares, &format!("{what}: a"));
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
        submit_blocked(c, &ew_mul_kind(), launch, &out, &t, &t).unwrap();
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
        assert_holds(c, &out, &want, what);
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

/// Scalar work fused into an element-wise launch (`s = 2 a + b` on 0-d stores, then
/// `t = s * x` and `u = t + x` over 4 points, `s` and `t` dropped) compiles into one kernel
/// that every point runs, with the unfused result. (These test kinds have no element
/// functions; the single loop nest with scalar work before it is tested with the array
/// library's kinds, `libs/array/tests/array/scalar_work.rs`.)
#[test]
fn scalar_work_fused_into_a_launch_compiles_and_runs_at_every_point() {
    let n = 32i64;
    let run = |fusion: FusionConfig, jit: Option<Arc<Jit>>| {
        let r = rig(2, fusion, None, jit);
        let c = &r.ctx;
        let launch = Tuple::shape(&[4]).unwrap();
        let x = random_vector(c, n, 9);
        let a = c.store_from_vec(&[], vec![1.25]).unwrap();
        let b = c.store_from_vec(&[], vec![-0.5]).unwrap();
        let (s, t) = submit_scaled_by_scalar_work(c, &x, &a, &b, launch);
        let u = whole(c, &[n]);
        submit_blocked(c, &ew_add_kind(), launch, &u, &t, &x).unwrap();
        drop((s, t));
        c.flush_window().unwrap();
        let values = c.read::<f64>(&u.view()).unwrap();
        (values, r.backend.stats().compiled_points)
    };
    let (off, _) = run(FusionConfig::off(), None);
    let jit = Arc::new(Jit::new());
    let (on, compiled) = run(fused(Some(8)), Some(jit.clone()));
    assert_eq!(bits(&on), bits(&off));
    let stats = jit.stats();
    assert_eq!(
        (stats.kernels_compiled, stats.compile_failures),
        (1, 0),
        "{stats:?}"
    );
    assert_eq!(compiled, 4, "every point runs the compiled kernel");
}

/// The stores of the chains `t1 = a + b`, ..., `d = t3 + b` below: `a` and `b` holding `x`
/// and `y`, then `t1`, `t2`, `t3` and `d`, fresh, of the same length.
fn chain_stores(c: &diffuse_ir::Context, x: &[f64], y: &[f64]) -> [Store; 6] {
    let n = [x.len() as i64];
    [
        c.store_from_vec(&n, x.to_vec()).unwrap(),
        c.store_from_vec(&n, y.to_vec()).unwrap(),
        whole(c, &n),
        whole(c, &n),
        whole(c, &n),
        whole(c, &n),
    ]
}

/// `t1 = a + b`, `t2 = opaque(t1)` (a kind without an MLIR body), `t3 = t2 * a`,
/// `d = t3 + b`, `acc += sum(d)` in one fused task: it has no kernel of its own, so its last
/// three constituents run as one compiled segment between the native ones (`t2` passed in
/// its point-local buffer, `t3` kept in registers, the sum into the point's accumulator),
/// with the bits of the unfused tasks.
#[test]
fn a_fused_task_with_a_constituent_without_mlir_runs_its_compilable_run_compiled() {
    let n = 16usize;
    let (x, y) = (random_data(n, 31), random_data(n, 32));
    let run = |fusion: FusionConfig, jit: Option<Arc<Jit>>| {
        let r = rig(2, fusion, None, jit);
        let c = &r.ctx;
        let launch = Tuple::shape(&[2]).unwrap();
        let [a, b, t1, t2, t3, d] = chain_stores(c, &x, &y);
        let acc = c.store_from_vec(&[], vec![0.5f64]).unwrap();
        submit_blocked(c, &ew_add_kind(), launch, &t1, &a, &b).unwrap();
        c.submit(
            IndexTask::new(&opaque_copy_kind(), launch)
                .arg(&t2, t2.view().blocked(launch).unwrap(), Privilege::Write)
                .arg(&t1, t1.view().blocked(launch).unwrap(), Privilege::Read),
        )
        .unwrap();
        submit_blocked(c, &ew_mul_kind(), launch, &t3, &t2, &a).unwrap();
        submit_blocked(c, &ew_add_kind(), launch, &d, &t3, &b).unwrap();
        submit_sum_all(c, &d, &acc, launch).unwrap();
        drop((t1, t2, t3));
        c.flush_window().unwrap();
        let stats = r.backend.stats();
        let runs = r.observed.take_fused();
        (
            bits(&c.read::<f64>(&d.view()).unwrap()),
            c.read_scalar::<f64>(&acc.view()).unwrap().to_bits(),
            stats.tasks_executed,
            stats.segment_points,
            runs.first().map(|f| f.temporaries),
        )
    };
    let (d, acc, executed, segments, _) = run(FusionConfig::off(), None);
    assert_eq!((executed, segments), (5, 0), "fusion off");
    let want: Vec<u64> = (0..n)
        .map(|i| ((x[i] + y[i]) * x[i] + y[i]).to_bits())
        .collect();
    assert_eq!(d, want, "fusion off");
    for (what, jit) in native_and_jit() {
        let compiles = jit.clone();
        let got = run(fused(Some(8)), jit);
        assert_eq!((&got.0, got.1), (&d, acc), "{what}");
        assert_eq!(got.2, 1, "{what}: not one fused task");
        assert_eq!(got.4, Some(3), "{what}: temporaries");
        let segment_points = if compiles.is_some() { 2 } else { 0 };
        assert_eq!(got.3, segment_points, "{what}: points that ran the segment");
        if let Some(jit) = compiles {
            let stats = jit.stats();
            assert_eq!(
                (stats.kernels_compiled, stats.compile_failures),
                (1, 0),
                "{what}: one kernel, the segment's: {stats:?}"
            );
        }
    }
}

/// `t1 = a + b`, `t2 = copy(t1)` by a kind that prefers its native kernel on CPUs
/// (`native_on_cpu`, as the array library's matrix products do), `t3 = t2 * a`,
/// `d = t3 + b` in one fused task: with a JIT the copy still runs its native kernel at every
/// point, and the compilable run after it compiles as a segment; alone, the copy runs
/// natively too. Its MLIR body is never compiled for the host.
#[test]
fn a_kind_preferring_its_native_kernel_runs_natively_in_a_fused_task() {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NATIVE_RUNS: AtomicU64 = AtomicU64::new(0);
    let copy = crate::common::kind_once(
        "fusion.native_preferred_copy",
        |b| {
            crate::common::unary_args(b, Privilege::Write)
                .elementwise()
                .mlir(Arc::new(crate::common::generators::Elementwise {
                    out: 0,
                    inputs: &[1],
                    body: crate::common::COPY.mlir,
                }))
                .native_on_cpu()
        },
        |t| {
            NATIVE_RUNS.fetch_add(1, Ordering::Relaxed);
            diffuse_ir::for_each_row::<f64>(t, 0, &[1], |out, ins| out.copy_from_slice(ins[0]))
        },
    );
    assert!(copy.prefers_native_on_cpu() && !copy.compiles_on_cpu());
    let n = 16usize;
    let (x, y) = (random_data(n, 41), random_data(n, 42));
    let want: Vec<u64> = (0..n)
        .map(|i| ((x[i] + y[i]) * x[i] + y[i]).to_bits())
        .collect();
    let run = |fusion: FusionConfig, jit: Option<Arc<Jit>>, alone: bool| {
        let r = rig(2, fusion, None, jit);
        let c = &r.ctx;
        let launch = Tuple::shape(&[2]).unwrap();
        let [a, b, t1, t2, t3, d] = chain_stores(c, &x, &y);
        submit_blocked(c, &ew_add_kind(), launch, &t1, &a, &b).unwrap();
        if alone {
            c.flush_window().unwrap();
        }
        c.submit(
            IndexTask::new(&copy, launch)
                .arg(&t2, t2.view().blocked(launch).unwrap(), Privilege::Write)
                .arg(&t1, t1.view().blocked(launch).unwrap(), Privilege::Read),
        )
        .unwrap();
        if alone {
            c.flush_window().unwrap();
        }
        submit_blocked(c, &ew_mul_kind(), launch, &t3, &t2, &a).unwrap();
        submit_blocked(c, &ew_add_kind(), launch, &d, &t3, &b).unwrap();
        drop((t1, t2, t3));
        c.flush_window().unwrap();
        let stats = r.backend.stats();
        (
            bits(&c.read::<f64>(&d.view()).unwrap()),
            stats.tasks_executed,
            stats.segment_points,
        )
    };
    for alone in [false, true] {
        let jit = Arc::new(Jit::new());
        let before = NATIVE_RUNS.load(Ordering::Relaxed);
        let (d, executed, segments) = run(fused(Some(8)), Some(jit.clone()), alone);
        assert_eq!(d, want, "alone: {alone}");
        assert_eq!(
            NATIVE_RUNS.load(Ordering::Relaxed) - before,
            2,
            "alone: {alone}: the copy's native kernel at both points"
        );
        let stats = jit.stats();
        if alone {
            // The copy alone, then the multiplication and addition fused into one kernel.
            assert_eq!(executed, 3, "three launches");
            assert_eq!(stats.kernels_compiled, 1, "{stats:?}");
        } else {
            assert_eq!(executed, 1, "one fused task");
            assert_eq!(segments, 2, "both points ran the segment after the copy");
            assert_eq!(stats.kernels_compiled, 1, "the segment's kernel: {stats:?}");
        }
    }
}
