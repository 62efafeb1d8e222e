//! The key property: any sequence of element-wise tasks over views of a few stores, run on the
//! embedded backend with any processor count, leaves every store bitwise equal to a plain
//! sequential evaluation of the same sequence on host vectors.

use std::cell::Cell;
use std::sync::Arc;

use diffuse_ir::{IndexTask, IrError, Privilege, Store, TaskKind, Tuple, View};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use crate::common::{add_assign_kind, add_kind, axpy_kind, copy_kind, ctx, mul_kind};
use crate::common::{counting_store, view_at};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    /// c = a + b
    Add,
    /// c = a * b
    Mul,
    /// c = s * a + b
    Axpy,
    /// c = a
    Copy,
    /// a += b
    AddAssign,
}

impl Op {
    fn inputs(self) -> usize {
        match self {
            Op::Add | Op::Mul | Op::Axpy => 2,
            Op::Copy | Op::AddAssign => 1,
        }
    }

    fn kind(self) -> Arc<TaskKind> {
        match self {
            Op::Add => add_kind(),
            Op::Mul => mul_kind(),
            Op::Axpy => axpy_kind(),
            Op::Copy => copy_kind(),
            Op::AddAssign => add_assign_kind(),
        }
    }

    fn out_privilege(self) -> Privilege {
        match self {
            Op::AddAssign => Privilege::ReadWrite,
            _ => Privilege::Write,
        }
    }
}

/// Raw generated numbers; [`plan`] turns them into a well-formed case.
#[derive(Clone, Debug)]
struct RawStore {
    extents: [i64; 2],
    dims: usize,
    seed: u64,
}

#[derive(Clone, Debug)]
struct RawTask {
    op: Op,
    out: usize,
    inputs: [usize; 2],
    same_view: bool,
    extents: [usize; 2],
    offsets: [[usize; 2]; 3],
    launch: [usize; 2],
    scalar: f64,
    check_after: bool,
}

#[derive(Clone, Debug)]
struct RawCase {
    /// 0: all stores 1-D, 1: all 2-D, 2: mixed (stores 0 and 1 share a rank).
    dims_mode: u8,
    stores: Vec<RawStore>,
    tasks: Vec<RawTask>,
    procs: usize,
}

fn raw_case() -> impl Strategy<Value = RawCase> {
    let store =
        (1i64..=24, 1i64..=24, 1usize..=2, any::<u64>()).prop_map(|(e0, e1, dims, seed)| {
            RawStore {
                extents: [e0, e1],
                dims,
                seed,
            }
        });
    let op = prop_oneof![
        Just(Op::Add),
        Just(Op::Mul),
        Just(Op::Axpy),
        Just(Op::Copy),
        Just(Op::AddAssign),
    ];
    let task = (
        op,
        0usize..4,
        [0usize..4, 0usize..4],
        prop::bool::weighted(0.3),
        [0usize..24, 0usize..24],
        [
            [0usize..24, 0usize..24],
            [0usize..24, 0usize..24],
            [0usize..24, 0usize..24],
        ],
        [0usize..4, 0usize..4],
        -4.0f64..4.0,
        prop::bool::weighted(0.25),
    )
        .prop_map(
            |(op, out, inputs, same_view, extents, offsets, launch, scalar, check_after)| RawTask {
                op,
                out,
                inputs,
                same_view,
                extents,
                offsets,
                launch,
                scalar,
                check_after,
            },
        );
    (
        0u8..3,
        prop::collection::vec(store, 2..=4),
        prop::collection::vec(task, 1..=12),
        1usize..=4,
    )
        .prop_map(|(dims_mode, stores, tasks, procs)| RawCase {
            dims_mode,
            stores,
            tasks,
            procs,
        })
}

/// One operand: a view `[offset, offset + shape)` of store `store`.
#[derive(Clone, Debug)]
struct Operand {
    store: usize,
    offset: Vec<i64>,
    shape: Vec<i64>,
}

#[derive(Clone, Debug)]
struct PlannedTask {
    op: Op,
    out: Operand,
    inputs: Vec<Operand>,
    launch: Vec<i64>,
    scalar: f64,
    check_after: bool,
}

#[derive(Debug)]
struct Plan {
    shapes: Vec<Vec<i64>>,
    data: Vec<Vec<f64>>,
    tasks: Vec<PlannedTask>,
    procs: usize,
}

/// Random values in [-10, 10) (see [`crate::common::random_data_in`]).
fn random_data(len: usize, seed: u64) -> Vec<f64> {
    crate::common::random_data_in(len, seed, 10.0)
}

fn plan(raw: &RawCase) -> Plan {
    let shapes: Vec<Vec<i64>> = raw
        .stores
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let dims = match raw.dims_mode {
                0 => 1,
                1 => 2,
                _ if i < 2 => raw.stores[0].dims,
                _ => s.dims,
            };
            s.extents[..dims].to_vec()
        })
        .collect();
    let data = raw
        .stores
        .iter()
        .zip(&shapes)
        .map(|(s, shape)| random_data(shape.iter().product::<i64>() as usize, s.seed))
        .collect();
    let n = shapes.len();
    let tasks = raw
        .tasks
        .iter()
        .filter_map(|t| {
            // The output, and the stores of its rank that it may read (never itself).
            let out = t.out % n;
            let dims = shapes[out].len();
            let candidates: Vec<usize> = (0..n)
                .filter(|&s| s != out && shapes[s].len() == dims)
                .collect();
            if candidates.is_empty() {
                return None;
            }
            let ins: Vec<usize> = t.inputs[..t.op.inputs()]
                .iter()
                .map(|&k| candidates[k % candidates.len()])
                .collect();
            let involved: Vec<usize> = std::iter::once(out).chain(ins.iter().copied()).collect();
            let shape: Vec<i64> = (0..dims)
                .map(|d| {
                    let max = involved.iter().map(|&s| shapes[s][d]).min().unwrap();
                    1 + (t.extents[d] as i64) % max
                })
                .collect();
            let operand = |k: usize, store: usize| Operand {
                store,
                offset: (0..dims)
                    .map(|d| (t.offsets[k][d] as i64) % (shapes[store][d] - shape[d] + 1))
                    .collect(),
                shape: shape.clone(),
            };
            let out_op = operand(0, out);
            let mut in_ops: Vec<Operand> = ins
                .iter()
                .enumerate()
                .map(|(k, &s)| operand(k + 1, s))
                .collect();
            if t.same_view && in_ops.len() == 2 && in_ops[0].store == in_ops[1].store {
                in_ops[1].offset = in_ops[0].offset.clone();
            }
            let launch = (0..dims)
                .map(|d| 1 + (t.launch[d] as i64) % shape[d].min(4))
                .collect();
            Some(PlannedTask {
                op: t.op,
                out: out_op,
                inputs: in_ops,
                launch,
                scalar: t.scalar,
                check_after: t.check_after,
            })
        })
        .collect();
    Plan {
        shapes,
        data,
        tasks,
        procs: raw.procs,
    }
}

/// Row-major linear index of `offset + (i, j)` in a store of `shape` (1-D uses `j` only).
fn linear(shape: &[i64], offset: &[i64], i: i64, j: i64) -> usize {
    match shape.len() {
        1 => (offset[0] + j) as usize,
        2 => ((offset[0] + i) * shape[1] + offset[1] + j) as usize,
        d => unreachable!("{d}-d store"),
    }
}

/// The reference: a straightforward nested loop over the view boxes, in the same arithmetic
/// order as the kernels.
fn reference_apply(model: &mut [Vec<f64>], shapes: &[Vec<i64>], t: &PlannedTask) {
    let (rows, cols) = match t.out.shape.as_slice() {
        [c] => (1, *c),
        [r, c] => (*r, *c),
        other => unreachable!("{other:?}"),
    };
    let at = |model: &[Vec<f64>], o: &Operand, i: i64, j: i64| {
        model[o.store][linear(&shapes[o.store], &o.offset, i, j)]
    };
    let mut results = Vec::new();
    for i in 0..rows {
        for j in 0..cols {
            let a = at(model, &t.inputs[0], i, j);
            let value = match t.op {
                Op::Add => a + at(model, &t.inputs[1], i, j),
                Op::Mul => a * at(model, &t.inputs[1], i, j),
                Op::Axpy => t.scalar * a + at(model, &t.inputs[1], i, j),
                Op::Copy => a,
                Op::AddAssign => at(model, &t.out, i, j) + a,
            };
            let dst = linear(&shapes[t.out.store], &t.out.offset, i, j);
            results.push((dst, value));
        }
    }
    for (dst, value) in results {
        model[t.out.store][dst] = value;
    }
}

/// Whether blocking a view of extent `e` over `l` launch points reaches a tile starting past
/// the view in some dimension (the only rejection this generator can provoke).
fn predicted_out_of_bounds(shape: &[i64], launch: &[i64]) -> bool {
    shape.iter().zip(launch).any(|(&e, &l)| {
        let tile = (e + l - 1) / l;
        (l - 1) * tile >= e
    })
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn view_of(stores: &[Store], o: &Operand) -> View {
    View::new(
        &stores[o.store],
        Tuple::new(&o.offset).unwrap(),
        Tuple::shape(&o.shape).unwrap(),
    )
    .expect("generated views fit their stores")
}

/// Reads the view `o` back from the model, row-major.
fn model_view(model: &[Vec<f64>], shapes: &[Vec<i64>], o: &Operand) -> Vec<f64> {
    let (rows, cols) = match o.shape.as_slice() {
        [c] => (1, *c),
        [r, c] => (*r, *c),
        other => unreachable!("{other:?}"),
    };
    let mut out = Vec::new();
    for i in 0..rows {
        for j in 0..cols {
            out.push(model[o.store][linear(&shapes[o.store], &o.offset, i, j)]);
        }
    }
    out
}

#[derive(Default)]
struct Counters {
    cases: Cell<usize>,
    tasks: Cell<usize>,
    accepted: Cell<usize>,
    rejected: Cell<usize>,
    /// Accepted tasks that are 2-D, read one store through two arguments, write a proper
    /// sub-view, and run several points on several processors.
    two_d: Cell<usize>,
    aliased_inputs: Cell<usize>,
    sub_view_out: Cell<usize>,
    parallel: Cell<usize>,
}

fn bump(c: &Cell<usize>, by: usize) {
    c.set(c.get() + by);
}

fn run_case(raw: &RawCase, counters: &Counters) -> Result<(), TestCaseError> {
    let plan = plan(raw);
    let ctx = ctx(plan.procs);
    let stores: Vec<Store> = plan
        .shapes
        .iter()
        .zip(&plan.data)
        .map(|(shape, data)| ctx.store_from_vec(shape, data.clone()).unwrap())
        .collect();
    let mut model = plan.data.clone();
    bump(&counters.cases, 1);
    for (step, t) in plan.tasks.iter().enumerate() {
        bump(&counters.tasks, 1);
        let launch = Tuple::shape(&t.launch).unwrap();
        let out_view = view_of(&stores, &t.out);
        let mut task = IndexTask::new(&t.op.kind(), launch).arg(
            out_view.store(),
            out_view.blocked(launch).unwrap(),
            t.op.out_privilege(),
        );
        for input in &t.inputs {
            let v = view_of(&stores, input);
            task = task.arg(v.store(), v.blocked(launch).unwrap(), Privilege::Read);
        }
        if t.op == Op::Axpy {
            task = task.scalar(t.scalar);
        }
        let predicted = predicted_out_of_bounds(&t.out.shape, &t.launch);
        match ctx.submit(task) {
            Ok(()) => {
                prop_assert!(
                    !predicted,
                    "step {step}: a task whose blocked tiling leaves the view was accepted: {t:?}"
                );
                bump(&counters.accepted, 1);
                bump(&counters.two_d, usize::from(t.out.shape.len() == 2));
                bump(
                    &counters.aliased_inputs,
                    usize::from(t.inputs.len() == 2 && t.inputs[0].store == t.inputs[1].store),
                );
                bump(
                    &counters.sub_view_out,
                    usize::from(t.out.shape != plan.shapes[t.out.store]),
                );
                bump(
                    &counters.parallel,
                    usize::from(plan.procs > 1 && t.launch.iter().product::<i64>() > 1),
                );
                reference_apply(&mut model, &plan.shapes, t);
            }
            Err(IrError::TilingOutOfBounds { .. }) if predicted => {
                bump(&counters.rejected, 1);
            }
            Err(e) => {
                return Err(TestCaseError::fail(format!(
                    "step {step}: unexpected error {e} for {t:?}"
                )))
            }
        }
        if t.check_after {
            let got = ctx.read::<f64>(&out_view).unwrap();
            let want = model_view(&model, &plan.shapes, &t.out);
            prop_assert_eq!(bits(&got), bits(&want), "output view after step {}", step);
        }
    }
    for (i, store) in stores.iter().enumerate() {
        let got = ctx.read::<f64>(&store.view()).unwrap();
        prop_assert_eq!(
            bits(&got),
            bits(&model[i]),
            "store {} (shape {:?}) differs from the sequential reference after {} tasks \
             on {} procs",
            i,
            &plan.shapes[i],
            plan.tasks.len(),
            plan.procs
        );
    }
    Ok(())
}

/// Random cases per run (each is cheap: small stores, a fresh backend).
const CASES: u32 = 256;

#[test]
fn elementwise_sequences_match_sequential_reference() {
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    });
    let counters = Counters::default();
    let result = runner.run(&raw_case(), |raw| run_case(&raw, &counters));
    if let Err(e) = result {
        panic!("{e}");
    }
    // The generator must mostly produce tasks the IR accepts, or the property says little.
    let (tasks, accepted, rejected) = (
        counters.tasks.get(),
        counters.accepted.get(),
        counters.rejected.get(),
    );
    let coverage = [
        ("2-d", counters.two_d.get()),
        ("aliased inputs", counters.aliased_inputs.get()),
        ("sub-view output", counters.sub_view_out.get()),
        ("parallel", counters.parallel.get()),
    ];
    eprintln!(
        "element-wise property: {} cases, {tasks} tasks, {accepted} accepted, {rejected} \
         rejected; accepted tasks by feature: {coverage:?}",
        counters.cases.get()
    );
    assert!(
        counters.cases.get() >= CASES as usize,
        "{} cases ran",
        counters.cases.get()
    );
    for (what, n) in coverage {
        assert!(
            n * 20 >= accepted,
            "only {n} of {accepted} accepted tasks are {what}"
        );
    }
    assert_eq!(accepted + rejected, tasks);
    assert!(
        accepted * 10 >= tasks * 8,
        "only {accepted} of {tasks} generated tasks were accepted ({rejected} rejected)"
    );
    assert!(
        accepted >= CASES as usize * 3,
        "only {accepted} tasks ran in total"
    );
}

/// A fixed case of the same machinery, so a broken reference or planner cannot silently make
/// the property vacuous: aliasing inputs, a view offset, a 2-D launch and every op.
#[test]
fn elementwise_fixed_sequence_on_views() {
    let c = ctx(3);
    let a = counting_store(&c, &[4, 6]);
    let b = c.store_from_vec(&[5, 5], vec![1.0; 25]).unwrap();
    let launch = Tuple::shape(&[2, 2]).unwrap();
    // b[1..4, 2..5] = a[0..3, 0..3] + a[1..4, 3..6]
    let out = view_at(&b, &[1, 2], &[3, 3]);
    let x = view_at(&a, &[0, 0], &[3, 3]);
    let y = view_at(&a, &[1, 3], &[3, 3]);
    c.submit(
        IndexTask::new(&add_kind(), launch)
            .arg(&b, out.blocked(launch).unwrap(), Privilege::Write)
            .arg(&a, x.blocked(launch).unwrap(), Privilege::Read)
            .arg(&a, y.blocked(launch).unwrap(), Privilege::Read),
    )
    .unwrap();
    let mut want = vec![1.0; 25];
    for i in 0..3 {
        for j in 0..3 {
            want[(1 + i) * 5 + 2 + j] = (i * 6 + j) as f64 + ((1 + i) * 6 + 3 + j) as f64;
        }
    }
    assert_eq!(c.read::<f64>(&b.view()).unwrap(), want);
    // a[1..4, 3..6] += b[1..4, 2..5]
    c.submit(
        IndexTask::new(&add_assign_kind(), launch)
            .arg(&a, y.blocked(launch).unwrap(), Privilege::ReadWrite)
            .arg(&b, out.blocked(launch).unwrap(), Privilege::Read),
    )
    .unwrap();
    let a_now = c.read::<f64>(&a.view()).unwrap();
    for i in 0..4 {
        for j in 0..6 {
            let base = (i * 6 + j) as f64;
            let expect = if i >= 1 && j >= 3 {
                base + want[i * 5 + j - 1]
            } else {
                base
            };
            assert_eq!(a_now[i * 6 + j], expect, "a[{i},{j}]");
        }
    }
}

/// Several application threads sharing one context: every thread's results are exactly its
/// own sequential evaluation (the backend serializes tasks and host copies).
#[test]
fn concurrent_submitters_share_one_context() {
    let c = ctx(3);
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            let c = c.clone();
            scope.spawn(move || {
                let n = 37;
                let x0 = random_data(n, t);
                let y0 = random_data(n, t + 100);
                let x = c.store_from_vec(&[n as i64], x0.clone()).unwrap();
                let y = c.store_from_vec(&[n as i64], y0.clone()).unwrap();
                let launch = Tuple::shape(&[4]).unwrap();
                let (mut xm, ym) = (x0, y0);
                for step in 0..50 {
                    c.submit(
                        IndexTask::new(&add_assign_kind(), launch)
                            .arg(&x, x.view().blocked(launch).unwrap(), Privilege::ReadWrite)
                            .arg(&y, y.view().blocked(launch).unwrap(), Privilege::Read),
                    )
                    .unwrap();
                    for (a, b) in xm.iter_mut().zip(&ym) {
                        *a += b;
                    }
                    if step % 10 == 0 {
                        assert_eq!(bits(&c.read::<f64>(&x.view()).unwrap()), bits(&xm));
                    }
                }
                assert_eq!(bits(&c.read::<f64>(&x.view()).unwrap()), bits(&xm));
                assert_eq!(bits(&c.read::<f64>(&y.view()).unwrap()), bits(&ym));
            });
        }
    });
}
