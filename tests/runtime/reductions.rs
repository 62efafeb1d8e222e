//! Reductions: private per-point accumulators that start at the identity and are folded into
//! the existing store value in point order.

use std::sync::Arc;

use diffuse_ir::{
    for_each_row, Context, DType, Element, IndexTask, Partition, Privilege, ProjComponent,
    Projection, ReductionOp, Store, TaskKind, Tuple, View,
};

use crate::common::view_at;
use crate::common::{ctx, kind_once, reduce_all_kind, row_sum_kind, submit_sum_all};

/// Integer-valued data (exact in f64 whatever the summation order).
fn int_data(len: usize, seed: i64) -> Vec<f64> {
    (0..len as i64)
        .map(|k| ((k * 37 + seed * 11) % 23 - 11) as f64)
        .collect()
}

/// Reduces `input` (blocked over `launch`) into a 0-d store holding `init`, through
/// `Replicate`; returns the store's value afterwards.
fn reduce_into_scalar(
    c: &Context,
    op: ReductionOp,
    input: &View,
    launch: &[i64],
    init: f64,
) -> f64 {
    let out = c.create_store(&[], DType::F64).unwrap();
    c.write(&out.view(), vec![init]).unwrap();
    let launch = Tuple::shape(launch).unwrap();
    c.submit(
        IndexTask::new(&reduce_all_kind(op), launch)
            .arg(
                input.store(),
                input.blocked(launch).unwrap(),
                Privilege::Read,
            )
            .arg(&out, Partition::replicate(), Privilege::Reduce(op)),
    )
    .unwrap();
    c.read_scalar::<f64>(&out.view()).unwrap()
}

#[test]
fn sum_min_max_prod_of_a_2d_store_into_a_0d_store() {
    let (rows, cols) = (7usize, 9usize);
    let data = int_data(rows * cols, 3);
    let sum: f64 = data.iter().sum();
    let min = data.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = data.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    for procs in 1..=4 {
        let c = ctx(procs);
        let a = c
            .store_from_vec(&[rows as i64, cols as i64], data.clone())
            .unwrap();
        for launch in [[1, 1], [3, 2], [2, 3], [7, 1], [4, 3]] {
            let v = a.view();
            let s = reduce_into_scalar(&c, ReductionOp::Sum, &v, &launch, 1000.0);
            assert_eq!(s, 1000.0 + sum, "sum, procs {procs}, launch {launch:?}");
            // The initial value takes part: once it wins, once the data wins.
            assert_eq!(
                reduce_into_scalar(&c, ReductionOp::Min, &v, &launch, -50.0),
                -50.0,
                "min with winning init"
            );
            assert_eq!(
                reduce_into_scalar(&c, ReductionOp::Min, &v, &launch, 50.0),
                min,
                "min, procs {procs}, launch {launch:?}"
            );
            assert_eq!(
                reduce_into_scalar(&c, ReductionOp::Max, &v, &launch, 50.0),
                50.0,
                "max with winning init"
            );
            assert_eq!(
                reduce_into_scalar(&c, ReductionOp::Max, &v, &launch, -50.0),
                max,
                "max, procs {procs}, launch {launch:?}"
            );
        }
        // Prod over exact powers of two.
        let p = c
            .store_from_vec(&[3, 4], (0..12).map(|k| [2.0, 0.5, 4.0][k % 3]).collect())
            .unwrap();
        let prod = reduce_into_scalar(&c, ReductionOp::Prod, &p.view(), &[3, 2], 3.0);
        assert_eq!(prod, 3.0 * 256.0, "prod, procs {procs}");
    }
}

#[test]
fn reduction_of_a_sub_view_sees_only_the_view() {
    let c = ctx(3);
    let (rows, cols) = (8i64, 10i64);
    let data = int_data((rows * cols) as usize, 5);
    let a = c.store_from_vec(&[rows, cols], data.clone()).unwrap();
    let v = view_at(&a, &[2, 3], &[5, 6]);
    let mut want = 0.0;
    for i in 2..7 {
        for j in 3..9 {
            want += data[(i * cols + j) as usize];
        }
    }
    assert_eq!(
        reduce_into_scalar(&c, ReductionOp::Sum, &v, &[2, 3], 0.5),
        0.5 + want
    );
}

/// Per-row sums of `input` (blocked over `launch`) into `out` (tiled by rows, projection
/// dropping the column dimension: several points reduce into the same tile).
fn row_sums(c: &Context, input: &View, out: &View, launch: [i64; 2]) {
    let launch_t = Tuple::shape(&launch).unwrap();
    let tile_rows = (input.shape()[0] + launch[0] - 1) / launch[0];
    let out_part = out
        .tiling_with(
            Tuple::shape(&[tile_rows]).unwrap(),
            Projection::select_dims(2, &[0]).unwrap(),
        )
        .unwrap();
    c.submit(
        IndexTask::new(&row_sum_kind(), launch_t)
            .arg(
                input.store(),
                input.blocked(launch_t).unwrap(),
                Privilege::Read,
            )
            .arg(out.store(), out_part, Privilege::Reduce(ReductionOp::Sum)),
    )
    .unwrap();
}

#[test]
fn per_row_sum_through_an_aliased_reduce_tiling() {
    let (rows, cols) = (9i64, 10i64);
    let data = int_data((rows * cols) as usize, 7);
    let init: Vec<f64> = (0..rows).map(|r| 1000.0 * r as f64).collect();
    let want: Vec<f64> = (0..rows)
        .map(|r| {
            init[r as usize]
                + data[(r * cols) as usize..((r + 1) * cols) as usize]
                    .iter()
                    .sum::<f64>()
        })
        .collect();
    for procs in 1..=4 {
        for launch in [[3, 4], [1, 4], [3, 1], [2, 2], [2, 3]] {
            let c = ctx(procs);
            let a = c.store_from_vec(&[rows, cols], data.clone()).unwrap();
            let out = c.store_from_vec(&[rows], init.clone()).unwrap();
            row_sums(&c, &a.view(), &out.view(), launch);
            assert_eq!(
                c.read::<f64>(&out.view()).unwrap(),
                want,
                "procs {procs}, launch {launch:?}"
            );
        }
    }
}

#[test]
fn per_row_sum_into_a_view_of_a_longer_vector() {
    let c = ctx(4);
    let data = int_data(6 * 7, 2);
    let a = c.store_from_vec(&[6, 7], data.clone()).unwrap();
    let out = c.store_from_vec(&[10], vec![-1.0; 10]).unwrap();
    // Rows 1..5 of a (4 rows, columns 2..7) into out[3..7].
    let input = view_at(&a, &[1, 2], &[4, 5]);
    let dst = view_at(&out, &[3], &[4]);
    row_sums(&c, &input, &dst, [2, 2]);
    let mut want = vec![-1.0; 10];
    for r in 0..4 {
        want[3 + r] += data[(1 + r) * 7 + 2..(1 + r) * 7 + 7].iter().sum::<f64>();
    }
    assert_eq!(c.read::<f64>(&out.view()).unwrap(), want);
}

/// Values spanning ~30 orders of magnitude: their f64 sum depends on the order of additions.
fn wild_data(len: usize) -> Vec<f64> {
    (0..len)
        .map(|k| {
            let mantissa = ((k * 7919) % 13) as f64 - 6.0 + 0.123_456_789 * k as f64;
            let exponent = ((k * 31) % 33) as i32 - 16;
            mantissa * 10f64.powi(exponent)
        })
        .collect()
}

/// The sum the embedded backend promises: every point folds its own block left to right from
/// the identity, then the blocks are folded into the initial value in point order.
fn point_order_sum(init: f64, blocks: &[&[f64]]) -> f64 {
    blocks
        .iter()
        .map(|b| {
            b.iter()
                .fold(0.0, |acc, &x| f64::reduce(ReductionOp::Sum, acc, x))
        })
        .fold(init, |acc, p| acc + p)
}

#[test]
fn float_sums_are_bitwise_deterministic_across_processor_counts() {
    let n = 60usize;
    let data = wild_data(n);
    let init = 0.25;
    // Launch of 6 points over 60 elements: blocks of 10.
    let blocks: Vec<&[f64]> = data.chunks(10).collect();
    let want = point_order_sum(init, &blocks);
    // The data is order-sensitive, so matching `want` is a real check of the fold order.
    let reversed = data.iter().rev().fold(init, |a, &x| a + x);
    let forward = data.iter().fold(init, |a, &x| a + x);
    assert!(
        want.to_bits() != reversed.to_bits() || want.to_bits() != forward.to_bits(),
        "test data is not order-sensitive"
    );
    let mut results = Vec::new();
    for procs in 1..=4 {
        let c = ctx(procs);
        let a = c.store_from_vec(&[n as i64], data.clone()).unwrap();
        let got = reduce_into_scalar(&c, ReductionOp::Sum, &a.view(), &[6], init);
        results.push(got.to_bits());
        assert_eq!(
            got.to_bits(),
            want.to_bits(),
            "procs {procs}: {got:e} vs point-order {want:e}"
        );
    }
    assert!(results.windows(2).all(|w| w[0] == w[1]), "{results:?}");
}

#[test]
fn row_sums_are_bitwise_deterministic_across_processor_counts() {
    let (rows, cols) = (4usize, 24usize);
    let data = wild_data(rows * cols);
    let init: Vec<f64> = (0..rows).map(|r| r as f64 * 1e-3).collect();
    // Launch (2, 4): each row is split into 4 column blocks of 6, folded in point order.
    let want: Vec<u64> = (0..rows)
        .map(|r| {
            let row = &data[r * cols..(r + 1) * cols];
            let blocks: Vec<&[f64]> = row.chunks(6).collect();
            point_order_sum(init[r], &blocks).to_bits()
        })
        .collect();
    for procs in 1..=4 {
        let c = ctx(procs);
        let a = c
            .store_from_vec(&[rows as i64, cols as i64], data.clone())
            .unwrap();
        let out = c.store_from_vec(&[rows as i64], init.clone()).unwrap();
        row_sums(&c, &a.view(), &out.view(), [2, 4]);
        let got: Vec<u64> = c
            .read::<f64>(&out.view())
            .unwrap()
            .iter()
            .map(|x| x.to_bits())
            .collect();
        assert_eq!(got, want, "procs {procs}");
    }
}

#[test]
fn repeated_reductions_accumulate_into_the_store() {
    let c = ctx(2);
    let a = c
        .store_from_vec(&[6], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        .unwrap();
    let out: Store = c.store_from_vec(&[], vec![10.0]).unwrap();
    let launch = Tuple::shape(&[3]).unwrap();
    for _ in 0..2 {
        submit_sum_all(&c, &a, &out, launch).unwrap();
    }
    assert_eq!(
        c.read_scalar::<f64>(&out.view()).unwrap(),
        10.0 + 2.0 * 21.0
    );
}

/// A Min reduction into a store holding +inf over data that is all +inf must leave +inf; a
/// Max over -inf likewise (the float identities are the infinities, not `f64::MAX`/`MIN`).
#[test]
fn min_max_reductions_preserve_infinities() {
    let c = ctx(2);
    let a = c.store_from_vec(&[4], vec![f64::INFINITY; 4]).unwrap();
    let got = reduce_into_scalar(&c, ReductionOp::Min, &a.view(), &[2], f64::INFINITY);
    assert_eq!(got, f64::INFINITY, "min of +inf values");
    let b = c.store_from_vec(&[4], vec![f64::NEG_INFINITY; 4]).unwrap();
    let got = reduce_into_scalar(&c, ReductionOp::Max, &b.view(), &[2], f64::NEG_INFINITY);
    assert_eq!(got, f64::NEG_INFINITY, "max of -inf values");
}

/// The additive identity of floats is -0.0: a sum of negative zeros stays a negative zero.
#[test]
fn sum_of_negative_zeros_is_negative_zero() {
    let c = ctx(2);
    let a = c.store_from_vec(&[4], vec![-0.0f64; 4]).unwrap();
    let got = reduce_into_scalar(&c, ReductionOp::Sum, &a.view(), &[2], -0.0);
    assert!(got == 0.0 && got.is_sign_negative(), "got {got:?}");
}

/// `acc += in` element-wise into a 2-D `Reduce(Sum)` accumulator (any tiling of the output).
fn add_reduce_kind() -> Arc<TaskKind> {
    kind_once(
        "add_reduce",
        |b| {
            b.arg("in", DType::F64, Privilege::Read).arg(
                "acc",
                DType::F64,
                Privilege::Reduce(ReductionOp::Sum),
            )
        },
        |t| {
            for_each_row::<f64>(t, 1, &[0], |acc, ins| {
                for (a, &x) in acc.iter_mut().zip(ins[0]) {
                    *a += x;
                }
            })
        },
    )
}

#[test]
fn block_column_sums_through_a_2d_aliased_reduce() {
    // in: 4x6 blocked over a (2, 3) launch into 2x2 tiles; out: 4x3, tile (2, 2), color
    // (p0, 0): the three column blocks of each row block fold into the same 2x2 tile, and
    // column 2 of out is never reached. (The 2x2 accumulators have other strides than out.)
    let data = int_data(24, 9);
    let init: Vec<f64> = (0..12).map(|k| 100.0 * k as f64).collect();
    let mut want = init.clone();
    for i in 0..4 {
        for j in 0..2 {
            for block in 0..3 {
                want[i * 3 + j] += data[i * 6 + block * 2 + j];
            }
        }
    }
    for procs in 1..=4 {
        let c = ctx(procs);
        let a = c.store_from_vec(&[4, 6], data.clone()).unwrap();
        let out = c.store_from_vec(&[4, 3], init.clone()).unwrap();
        let launch = Tuple::shape(&[2, 3]).unwrap();
        let proj = Projection::new(2, &[ProjComponent::Dim(0), ProjComponent::Const(0)]).unwrap();
        let out_part = out
            .view()
            .tiling_with(Tuple::shape(&[2, 2]).unwrap(), proj)
            .unwrap();
        c.submit(
            IndexTask::new(&add_reduce_kind(), launch)
                .arg(&a, a.view().blocked(launch).unwrap(), Privilege::Read)
                .arg(&out, out_part, Privilege::Reduce(ReductionOp::Sum)),
        )
        .unwrap();
        assert_eq!(c.read::<f64>(&out.view()).unwrap(), want, "procs {procs}");
    }
}
