//! Bad input is rejected with the specific typed error (never a panic), and validation errors
//! name the task kind, the argument(s) and the offending shapes or values.

use std::sync::Arc;

use diffuse_ir::{
    validate, DType, IndexTask, IrError, Partition, PartitionKind, Privilege, ProjComponent,
    Projection, Rect, ReductionOp, TaskKind, Tuple, View, MAX_DIMS,
};

use crate::common::{
    assert_mentions as assert_mentions_all, context_with_executor, ctx, kind, kind_with, pt, sh,
    unique_name,
};

const R: Privilege = Privilege::Read;
const W: Privilege = Privilege::Write;
const F64: DType = DType::F64;

fn identity(dims: usize) -> Projection {
    Projection::identity(dims).unwrap()
}

#[test]
fn aligned_args_with_different_view_shapes_are_a_shape_mismatch() {
    let c = ctx();
    let k = kind_with(
        "aligned3",
        &[(F64, R), (F64, R), (F64, W)],
        &[],
        &[&[0, 1, 2]],
    );
    let name = k.name().to_string();
    let a = c.create_store(&[4, 4], F64).unwrap();
    let b = c.create_store(&[6, 4], F64).unwrap();
    let out = c.create_store(&[4, 4], F64).unwrap();
    let launch = sh(&[2, 2]);
    // Argument 1 is a 4x4 window of a 6x4 store: same view shape as argument 0, so aligned.
    let b_view = View::new(&b, pt(&[1, 0]), sh(&[4, 4])).unwrap();
    // Argument 2 is a 4x3 window: its tiles are clipped differently.
    let narrow = View::new(&out, pt(&[0, 1]), sh(&[4, 3])).unwrap();

    let task = IndexTask::new(&k, launch)
        .arg(&a, a.view().blocked(launch).unwrap(), R)
        .arg(&b, b_view.blocked(launch).unwrap(), R)
        .arg(&out, narrow.blocked(launch).unwrap(), W);
    let err = validate(&task).unwrap_err();
    assert!(
        matches!(
            &err,
            IrError::ShapeMismatch { kind, first: 1, second: 2, first_shape, second_shape, .. }
                if kind == &name && *first_shape == sh(&[4, 4]) && *second_shape == sh(&[4, 3])
        ),
        "{err:?}"
    );
    assert_mentions_all(&err, &[&name, "arguments 1 and 2", "(4, 4)", "(4, 3)"]);

    // With a 4x4 window for argument 2 the same task is accepted.
    let full = View::new(&out, pt(&[0, 0]), sh(&[4, 4])).unwrap();
    let ok = IndexTask::new(&k, launch)
        .arg(&a, a.view().blocked(launch).unwrap(), R)
        .arg(&b, b_view.blocked(launch).unwrap(), R)
        .arg(&out, full.blocked(launch).unwrap(), W);
    validate(&ok).expect("aligned arguments with equal view shapes");
}

#[test]
fn aligned_args_in_a_single_point_launch_compare_their_one_sub_store() {
    let c = ctx();
    let k = kind_with("aligned-1pt", &[(F64, R), (F64, W)], &[], &[&[0, 1]]);
    let a = c.create_store(&[3], F64).unwrap();
    let b = c.create_store(&[4], F64).unwrap();
    let one = sh(&[1]);
    let task = IndexTask::new(&k, one)
        .arg(&a, Partition::replicate(), R)
        .arg(&b, Partition::replicate(), W);
    let err = validate(&task).unwrap_err();
    assert!(
        matches!(
            &err,
            IrError::ShapeMismatch {
                first: 0,
                second: 1,
                ..
            }
        ),
        "{err:?}"
    );
    assert_mentions_all(&err, &[k.name(), "arguments 0 and 1", "(3,)", "(4,)"]);

    // A 3-element window of b through a one-tile tiling matches a's whole store.
    let win = View::new(&b, pt(&[1]), sh(&[3])).unwrap();
    let ok = IndexTask::new(&k, one)
        .arg(&a, Partition::replicate(), R)
        .arg(&b, win.blocked(one).unwrap(), W);
    validate(&ok).expect("equal sub-store shapes at the only point");
}

#[test]
fn tile_dims_that_differ_from_store_dims_are_a_dim_mismatch() {
    let c = ctx();
    let k = kind("tile-dims", &[(F64, R), (F64, R)]);
    let ok = c.create_store(&[4, 4], F64).unwrap();
    let vec4 = c.create_store(&[4], F64).unwrap();
    let launch = sh(&[2, 2]);
    let two_d = Partition::tiling(sh(&[2, 2]), pt(&[0, 0]), identity(2)).unwrap();
    let task = IndexTask::new(&k, launch)
        .arg(&ok, two_d.clone(), R)
        .arg(&vec4, two_d, R);
    let err = validate(&task).unwrap_err();
    assert!(
        matches!(&err, IrError::DimMismatch { arg: 1, store, store_shape, launch: l, .. }
            if *store == vec4.id() && *store_shape == sh(&[4]) && *l == launch),
        "{err:?}"
    );
    assert_mentions_all(
        &err,
        &[
            k.name(),
            "argument 1",
            "(2, 2)",
            "(4,)",
            &vec4.id().to_string(),
        ],
    );
}

#[test]
fn projection_in_dims_that_differ_from_launch_dims_are_a_dim_mismatch() {
    let c = ctx();
    let k = kind("proj-dims", &[(F64, R), (F64, R)]);
    let a = c.create_store(&[4], F64).unwrap();
    let b = c.create_store(&[4], F64).unwrap();
    let launch = sh(&[2, 1]);
    // Argument 0 drops the second launch dim and is fine; argument 1 takes 1-d points.
    let good = Partition::tiling(
        sh(&[2]),
        pt(&[0]),
        Projection::select_dims(2, &[0]).unwrap(),
    )
    .unwrap();
    let bad = Partition::tiling(sh(&[2]), pt(&[0]), identity(1)).unwrap();
    let task = IndexTask::new(&k, launch).arg(&a, good, R).arg(&b, bad, R);
    let err = validate(&task).unwrap_err();
    assert!(
        matches!(&err, IrError::DimMismatch { arg: 1, launch: l, .. } if *l == launch),
        "{err:?}"
    );
    assert_mentions_all(&err, &[k.name(), "argument 1", "(2, 1)", "(4,)", "1-d"]);
}

#[test]
fn a_launch_reaching_tiles_outside_the_store_is_tiling_out_of_bounds() {
    let c = ctx();
    let k = kind("oob", &[(F64, R), (F64, R)]);
    let a = c.create_store(&[4], F64).unwrap();
    let s = c.create_store(&[4], F64).unwrap();
    let part = Partition::tiling(sh(&[2]), pt(&[0]), identity(1)).unwrap();
    let ok_part = Partition::replicate();
    let task = IndexTask::new(&k, sh(&[3]))
        .arg(&a, ok_part.clone(), R)
        .arg(&s, part.clone(), R);
    let err = validate(&task).unwrap_err();
    assert!(
        matches!(
            &err,
            IrError::TilingOutOfBounds { arg: 1, store, store_shape, launch, color, tile_origin, region_lo, region_hi, .. }
                if *store == s.id()
                    && *store_shape == sh(&[4])
                    && *launch == sh(&[3])
                    && *color == pt(&[2])
                    && *tile_origin == pt(&[4])
                    && *region_lo == pt(&[0])
                    && *region_hi == pt(&[4])
        ),
        "{err:?}"
    );
    assert_mentions_all(&err, &[k.name(), "argument 1", "(3,)", "(4,)", "(2,)"]);

    // Launch 2 reaches exactly the store.
    let ok = IndexTask::new(&k, sh(&[2]))
        .arg(&a, ok_part, R)
        .arg(&s, part, R);
    validate(&ok).expect("two tiles of 2 fit a size-4 store");
}

#[test]
fn a_tiling_of_a_view_is_bounded_by_the_view_not_the_store() {
    let c = ctx();
    let k = kind("oob-view", &[(F64, R)]);
    let s = c.create_store(&[10], F64).unwrap();
    let v = View::new(&s, pt(&[0]), sh(&[4])).unwrap();
    // Tile 2 over 3 points would fit the store (tile 2 starts at 4 < 10) but not the view.
    let part = v.tiling_with(sh(&[2]), identity(1)).unwrap();
    let task = IndexTask::new(&k, sh(&[3])).arg(&s, part, R);
    let err = validate(&task).unwrap_err();
    assert!(
        matches!(&err, IrError::TilingOutOfBounds { arg: 0, region_hi, .. } if *region_hi == pt(&[4])),
        "{err:?}"
    );
    assert_mentions_all(&err, &[k.name(), "argument 0", "(10,)"]);
}

#[test]
fn a_privilege_the_kind_does_not_declare_is_rejected() {
    let c = ctx();
    let k = kind("priv", &[(F64, R), (F64, R)]);
    let a = c.create_store(&[4], F64).unwrap();
    let b = c.create_store(&[4], F64).unwrap();
    let part = a.view().blocked(sh(&[2])).unwrap();
    let task = IndexTask::new(&k, sh(&[2]))
        .arg(&a, part.clone(), R)
        .arg(&b, part, W);
    let err = validate(&task).unwrap_err();
    assert!(
        matches!(
            &err,
            IrError::PrivilegeNotDeclared { kind, arg: 1, declared: Privilege::Read, requested: Privilege::Write }
                if kind == k.name()
        ),
        "{err:?}"
    );
    assert_mentions_all(&err, &[k.name(), "argument 1", "privilege W", "declares R"]);
}

#[test]
fn a_multi_point_write_through_replicate_is_rejected() {
    let c = ctx();
    let k = kind("repl-write", &[(F64, R), (F64, W)]);
    let a = c.create_store(&[4, 4], F64).unwrap();
    let out = c.create_store(&[4, 4], F64).unwrap();
    let task = IndexTask::new(&k, sh(&[2, 2]))
        .arg(&a, Partition::replicate(), R)
        .arg(&out, Partition::replicate(), W);
    let err = validate(&task).unwrap_err();
    assert!(
        matches!(
            &err,
            IrError::ReplicatedWrite { arg: 1, store, store_shape, privilege: Privilege::Write, points: 4, .. }
                if *store == out.id() && *store_shape == sh(&[4, 4])
        ),
        "{err:?}"
    );
    assert_mentions_all(&err, &[k.name(), "argument 1", "(4, 4)", "4 points"]);

    // One point may write the whole store; many points may reduce into it.
    let single = IndexTask::new(&k, sh(&[1, 1]))
        .arg(&a, Partition::replicate(), R)
        .arg(&out, Partition::replicate(), W);
    validate(&single).expect("a single point may write through Replicate");
    let sum = Privilege::Reduce(ReductionOp::Sum);
    let kr = kind("repl-reduce", &[(F64, R), (F64, sum)]);
    let reduce = IndexTask::new(&kr, sh(&[2, 2]))
        .arg(&a, Partition::replicate(), R)
        .arg(&out, Partition::replicate(), sum);
    validate(&reduce).expect("reductions through Replicate combine");
}

#[test]
fn a_write_through_a_non_injective_projection_is_an_aliased_write() {
    let c = ctx();
    let k = kind("aliased", &[(F64, R), (F64, W)]);
    let a = c.create_store(&[4, 4], F64).unwrap();
    let v = c.create_store(&[4], F64).unwrap();
    let launch = sh(&[2, 2]);
    // Figure 4(d): points (i, 0) and (i, 1) share a tile.
    let aliased = Partition::tiling(
        sh(&[2]),
        pt(&[0]),
        Projection::select_dims(2, &[0]).unwrap(),
    )
    .unwrap();
    let task = IndexTask::new(&k, launch)
        .arg(&a, a.view().blocked(launch).unwrap(), R)
        .arg(&v, aliased.clone(), W);
    let err = validate(&task).unwrap_err();
    assert!(
        matches!(
            &err,
            IrError::AliasedWrite { arg: 1, store, launch: l, privilege: Privilege::Write, projection, .. }
                if *store == v.id() && *l == launch && projection.contains("p0")
        ),
        "{err:?}"
    );
    assert_mentions_all(
        &err,
        &[k.name(), "argument 1", "(2, 2)", "proj[2d -> (p0)]"],
    );

    // Over a 2x1 domain the dropped dimension has one point: injective, accepted.
    let narrow = sh(&[2, 1]);
    let ok = IndexTask::new(&k, narrow)
        .arg(&a, a.view().blocked(narrow).unwrap(), R)
        .arg(&v, aliased.clone(), W);
    validate(&ok).expect("dropping a one-point dimension is injective");

    // Read-write is a write too.
    let krw = kind("aliased-rw", &[(F64, Privilege::ReadWrite)]);
    let rw = IndexTask::new(&krw, launch).arg(&v, aliased, Privilege::ReadWrite);
    assert!(matches!(
        validate(&rw),
        Err(IrError::AliasedWrite {
            privilege: Privilege::ReadWrite,
            ..
        })
    ));
}

#[test]
fn a_store_of_the_wrong_dtype_is_a_dtype_mismatch() {
    let c = ctx();
    let k = kind("dtype", &[(F64, R), (F64, R)]);
    let a = c.create_store(&[4], F64).unwrap();
    let b = c.create_store(&[4], DType::I32).unwrap();
    let task = IndexTask::new(&k, sh(&[1]))
        .arg(&a, Partition::replicate(), R)
        .arg(&b, Partition::replicate(), R);
    let err = validate(&task).unwrap_err();
    assert!(
        matches!(
            &err,
            IrError::DTypeMismatch { arg: 1, expected: DType::F64, found: DType::I32, store, .. }
                if *store == b.id()
        ),
        "{err:?}"
    );
    assert_mentions_all(
        &err,
        &[k.name(), "argument 1", "f64", "i32", &b.id().to_string()],
    );
}

#[test]
fn two_args_naming_a_written_store_interfere_but_two_reads_do_not() {
    let c = ctx();
    let launch = sh(&[2]);
    let s = c.create_store(&[4], F64).unwrap();
    let blocked = s.view().blocked(launch).unwrap();

    let k = kind("interfere", &[(F64, R), (F64, W)]);
    let task = IndexTask::new(&k, launch)
        .arg(&s, blocked.clone(), R)
        .arg(&s, blocked.clone(), W);
    let err = validate(&task).unwrap_err();
    assert!(
        matches!(
            &err,
            IrError::InterferingArgs { first: 0, second: 1, store, first_privilege: Privilege::Read, second_privilege: Privilege::Write, .. }
                if *store == s.id()
        ),
        "{err:?}"
    );
    assert_mentions_all(&err, &[k.name(), "arguments 0 and 1", &s.id().to_string()]);

    // Two reads of the same store through different partitions, plus a write elsewhere.
    let out = c.create_store(&[4], F64).unwrap();
    let kr = kind_with("two-reads", &[(F64, R), (F64, R), (F64, W)], &[], &[]);
    let ok = IndexTask::new(&kr, launch)
        .arg(&s, blocked.clone(), R)
        .arg(&s, Partition::replicate(), R)
        .arg(&out, out.view().blocked(launch).unwrap(), W);
    validate(&ok).expect("reads of one store never interfere");

    // Reductions with one operator commute; with two operators they interfere.
    let sum = Privilege::Reduce(ReductionOp::Sum);
    let max = Privilege::Reduce(ReductionOp::Max);
    let ks = kind("two-sums", &[(F64, sum), (F64, sum)]);
    let same_op = IndexTask::new(&ks, launch)
        .arg(&s, blocked.clone(), sum)
        .arg(&s, Partition::replicate(), sum);
    validate(&same_op).expect("two sum reductions into one store commute");
    let km = kind("sum-max", &[(F64, sum), (F64, max)]);
    let mixed = IndexTask::new(&km, launch)
        .arg(&s, blocked.clone(), sum)
        .arg(&s, blocked, max);
    assert!(matches!(
        validate(&mixed),
        Err(IrError::InterferingArgs {
            first: 0,
            second: 1,
            ..
        })
    ));
}

#[test]
fn a_wrong_number_of_store_args_is_an_arg_count_error() {
    let c = ctx();
    let k = kind("argc", &[(F64, R), (F64, W)]);
    let a = c.create_store(&[4], F64).unwrap();
    let task = IndexTask::new(&k, sh(&[1])).arg(&a, Partition::replicate(), R);
    let err = validate(&task).unwrap_err();
    assert!(
        matches!(&err, IrError::ArgCount { kind, expected: 2, found: 1 } if kind == k.name()),
        "{err:?}"
    );
    assert_mentions_all(&err, &[k.name(), "takes 2 store arguments, got 1"]);
}

#[test]
fn wrong_scalars_are_a_scalar_mismatch() {
    let c = ctx();
    let k = kind_with("scalars", &[(F64, W)], &[DType::F64], &[]);
    let a = c.create_store(&[4], F64).unwrap();
    let mk = || IndexTask::new(&k, sh(&[1])).arg(&a, Partition::replicate(), W);

    let wrong_type = mk().scalar(1i64);
    let err = validate(&wrong_type).unwrap_err();
    assert!(
        matches!(&err, IrError::ScalarMismatch { kind, expected, found }
            if kind == k.name() && expected == &[DType::F64] && found == &[DType::I64]),
        "{err:?}"
    );
    assert_mentions_all(&err, &[k.name(), "F64", "I64"]);

    let missing = mk();
    assert!(matches!(
        validate(&missing),
        Err(IrError::ScalarMismatch { ref found, .. }) if found.is_empty()
    ));
    let extra = mk().scalar(0.2f64).scalar(0.3f64);
    assert!(matches!(
        validate(&extra),
        Err(IrError::ScalarMismatch { ref found, .. }) if found.len() == 2
    ));
    validate(&mk().scalar(0.2f64)).expect("the declared scalar");
}

#[test]
fn an_empty_launch_domain_is_rejected() {
    let c = ctx();
    let k = kind("empty-launch", &[(F64, R)]);
    let a = c.create_store(&[4, 4], F64).unwrap();
    let task = IndexTask::new(&k, sh(&[3, 0])).arg(&a, Partition::replicate(), R);
    let err = validate(&task).unwrap_err();
    assert!(
        matches!(&err, IrError::EmptyLaunch { kind, domain } if kind == k.name() && *domain == sh(&[3, 0])),
        "{err:?}"
    );
    assert_mentions_all(&err, &[k.name(), "(3, 0)"]);

    let negative = IndexTask::new(&k, pt(&[-1, 2])).arg(&a, Partition::replicate(), R);
    assert!(matches!(
        validate(&negative),
        Err(IrError::EmptyLaunch { .. })
    ));
}

#[test]
fn a_store_used_after_its_last_handle_is_dropped_is_dead() {
    let c = ctx();
    let k = kind("dead", &[(F64, R), (F64, R)]);
    let live = c.create_store(&[4], F64).unwrap();
    let doomed = c.create_store(&[4], F64).unwrap();
    let doomed_id = doomed.id();
    let part = doomed.view().blocked(sh(&[2])).unwrap();
    let task = IndexTask::new(&k, sh(&[2]))
        .arg(&live, part.clone(), R)
        .arg(&doomed, part, R);
    validate(&task).expect("both stores are alive");
    drop(doomed);
    let err = validate(&task).unwrap_err();
    assert!(
        matches!(&err, IrError::DeadStore { kind, arg: 1, store } if kind == k.name() && *store == doomed_id),
        "{err:?}"
    );
    assert_mentions_all(&err, &[k.name(), "argument 1", &doomed_id.to_string()]);
}

#[test]
fn submit_rejects_invalid_tasks_before_the_executor_sees_them() {
    let (c, exec) = context_with_executor();
    let k = kind("submit", &[(F64, W)]);
    let s = c.create_store(&[4], F64).unwrap();
    let bad = IndexTask::new(&k, sh(&[2])).arg(&s, Partition::replicate(), W);
    assert!(matches!(
        c.submit(bad),
        Err(IrError::ReplicatedWrite { .. })
    ));
    assert_eq!(exec.executed.load(std::sync::atomic::Ordering::SeqCst), 0);

    // A valid task is forwarded (and our executor refuses to run it).
    let good = IndexTask::new(&k, sh(&[2])).arg(&s, s.view().blocked(sh(&[2])).unwrap(), W);
    assert!(matches!(c.submit(good), Err(IrError::Backend { .. })));
    assert_eq!(exec.executed.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(c.executor_name(), crate::common::NULL_BACKEND);
}

// ---- Construction errors (no task involved) --------------------------------------------------

#[test]
fn tuples_with_more_than_max_dims_are_errors() {
    assert_eq!(MAX_DIMS, 6);
    assert!(Tuple::new(&[0; 6]).is_ok());
    assert!(matches!(
        Tuple::new(&[0; 7]),
        Err(IrError::TooManyDims { dims: 7, max: 6 })
    ));
    assert!(matches!(
        Tuple::shape(&[1; 7]),
        Err(IrError::TooManyDims { dims: 7, max: 6 })
    ));
    assert!(matches!(
        ctx().create_store(&[1; 7], F64),
        Err(IrError::TooManyDims { dims: 7, .. })
    ));
    assert!(matches!(
        Projection::new(7, &[]),
        Err(IrError::TooManyDims { dims: 7, .. })
    ));
    assert!(matches!(
        Projection::constant(1, &[0; 7]),
        Err(IrError::TooManyDims { dims: 7, .. })
    ));
    let err = Tuple::new(&[0; 7]).unwrap_err();
    assert_mentions_all(&err, &["7", "6"]);
}

#[test]
fn negative_extents_are_errors() {
    let err = Tuple::shape(&[2, -3]).unwrap_err();
    assert!(
        matches!(err, IrError::NegativeExtent { extent: -3, .. }),
        "{err:?}"
    );
    assert_mentions_all(&err, &["(2, -3)", "-3"]);
    assert!(matches!(
        ctx().create_store(&[4, -1], F64),
        Err(IrError::NegativeExtent { extent: -1, .. })
    ));
    // Zero extents are fine: an empty store.
    let empty = ctx().create_store(&[0, 3], F64).unwrap();
    assert_eq!(empty.size_bytes(), 0);
}

#[test]
fn views_out_of_bounds_are_errors() {
    let c = ctx();
    let s = c.create_store(&[4, 4], F64).unwrap();
    let cases: [(&[i64], &[i64]); 5] = [
        (&[2, 2], &[3, 1]),  // runs past the end of dim 0
        (&[0, 4], &[1, 1]),  // starts at the end of dim 1
        (&[-1, 0], &[2, 2]), // negative offset
        (&[0, 0], &[5, 4]),  // larger than the store
        (&[0], &[4]),        // wrong number of dims
    ];
    for (off, shape) in cases {
        let err = View::new(&s, pt(off), pt(shape)).unwrap_err();
        assert!(
            matches!(&err, IrError::ViewOutOfBounds { store, store_shape, .. }
                if *store == s.id() && *store_shape == sh(&[4, 4])),
            "{off:?} {shape:?}: {err:?}"
        );
        assert_mentions_all(&err, &["(4, 4)", &s.id().to_string()]);
    }
    // A negative view extent is out of bounds too.
    assert!(matches!(
        View::new(&s, pt(&[1, 1]), pt(&[2, -1])),
        Err(IrError::ViewOutOfBounds { .. })
    ));
    // The exact fit is fine.
    View::new(&s, pt(&[1, 2]), sh(&[3, 2])).expect("a view touching the far corner");

    // A subview must fit its parent view, not just the store.
    let v = View::new(&s, pt(&[2, 0]), sh(&[2, 4])).unwrap();
    let err = v.subview(pt(&[0, 0]), sh(&[3, 1])).unwrap_err();
    assert!(matches!(err, IrError::ViewOutOfBounds { .. }), "{err:?}");
    assert!(v.subview(pt(&[1, 1]), sh(&[1, 3])).is_ok());
}

#[test]
fn bad_projections_are_errors() {
    let bad = [
        Projection::permutation(&[0, 0]),
        Projection::permutation(&[0, 2]),
        Projection::select_dims(1, &[1]),
        Projection::constant(1, &[-1]),
        Projection::new(2, &[ProjComponent::Dim(2)]),
    ];
    for (i, p) in bad.into_iter().enumerate() {
        assert!(
            matches!(p, Err(IrError::BadProjection { .. })),
            "case {i}: {p:?}"
        );
    }
    let err = Projection::constant(2, &[-5]).unwrap_err();
    assert_mentions_all(&err, &["-5"]);
}

#[test]
fn bad_tilings_are_errors() {
    let id1 = identity(1);
    let id2 = identity(2);
    // Zero and negative tile extents.
    let err = Partition::tiling(sh(&[2, 0]), pt(&[0, 0]), id2.clone()).unwrap_err();
    assert!(matches!(err, IrError::BadTiling { .. }), "{err:?}");
    assert_mentions_all(&err, &["(2, 0)"]);
    assert!(matches!(
        Partition::tiling(pt(&[-2]), pt(&[0]), id1.clone()),
        Err(IrError::BadTiling { .. })
    ));
    // A zero tile through the view API too.
    let c = ctx();
    let s = c.create_store(&[4, 4], F64).unwrap();
    assert!(matches!(
        s.view().tiling_with(sh(&[0, 1]), id2.clone()),
        Err(IrError::BadTiling { .. })
    ));
    // Negative offset, negative clip.
    assert!(matches!(
        Partition::tiling(sh(&[2]), pt(&[-1]), id1.clone()),
        Err(IrError::BadTiling { .. })
    ));
    assert!(matches!(
        Partition::tiling_of_view(sh(&[2]), pt(&[0]), id1.clone(), pt(&[-1])),
        Err(IrError::BadTiling { .. })
    ));
    // Parts that disagree on dims: offset, projection output, clip.
    assert!(matches!(
        Partition::tiling(sh(&[2, 2]), pt(&[0]), id2.clone()),
        Err(IrError::BadTiling { .. })
    ));
    assert!(matches!(
        Partition::tiling(sh(&[2, 2]), pt(&[0, 0]), id1.clone()),
        Err(IrError::BadTiling { .. })
    ));
    assert!(matches!(
        Partition::tiling_of_view(sh(&[2, 2]), pt(&[0, 0]), id2, sh(&[4])),
        Err(IrError::BadTiling { .. })
    ));
    // Blocking over a launch of the wrong rank.
    assert!(matches!(
        s.view().blocked(sh(&[2])),
        Err(IrError::BadTiling { .. })
    ));
}

/// Threads registering the same kind on first use at once all get the one kind (a library
/// registering its kinds lazily used to fail one of them with `DuplicateKind`).
#[test]
fn racing_first_uses_of_a_kind_share_one_registration() {
    for round in 0..20 {
        let name = unique_name(&format!("race{round}"));
        let barrier = std::sync::Barrier::new(8);
        let kinds: Vec<Arc<TaskKind>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        TaskKind::lookup_or_register(&name, |b| {
                            b.arg("a", F64, R).register(|t| Err(t.error("never run")))
                        })
                        .unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(kinds.iter().all(|k| Arc::ptr_eq(k, &kinds[0])));
    }
}

#[test]
fn duplicate_kind_names_and_inconsistent_kinds_are_errors() {
    let name = unique_name("dup");
    let first = TaskKind::builder(name.clone())
        .arg("a", F64, R)
        .register(|t| Err(t.error("never run")))
        .unwrap();
    assert_eq!(first.name(), name);
    assert!(Arc::ptr_eq(&TaskKind::lookup(&name).unwrap(), &first));
    let err = TaskKind::builder(name.clone())
        .arg("b", DType::I32, W)
        .register(|t| Err(t.error("never run")))
        .unwrap_err();
    assert!(
        matches!(&err, IrError::DuplicateKind { name: n } if *n == name),
        "{err:?}"
    );
    assert_mentions_all(&err, &[&name]);
    // The registry still holds the first definition.
    assert_eq!(TaskKind::lookup(&name).unwrap().args()[0].dtype, F64);

    let bad = unique_name("bad-aligned");
    let err = TaskKind::builder(bad.clone())
        .arg("a", F64, R)
        .aligned(&[0, 1])
        .register(|t| Err(t.error("never run")))
        .unwrap_err();
    assert!(
        matches!(&err, IrError::BadKind { kind, .. } if *kind == bad),
        "{err:?}"
    );
    assert!(
        TaskKind::lookup(&bad).is_none(),
        "a rejected kind is not registered"
    );
}

// ---- Overflow and rank edge cases: errors, never panics or wrapped arithmetic ----------

#[test]
fn subview_with_a_shape_of_fewer_dims_is_an_error_not_a_panic() {
    let c = ctx();
    let s = c.create_store(&[4, 4], F64).unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        s.view().subview(pt(&[0, 0]), sh(&[1])).map(|v| v.bounds())
    }));
    assert!(
        matches!(r, Ok(Err(IrError::ViewOutOfBounds { .. }))),
        "View::subview((0, 0), (1,)) on a 2-d view must return ViewOutOfBounds, got {:?}",
        r.map(|x| x.map_err(|e| e.to_string()))
    );
}

#[test]
fn view_bounds_check_does_not_overflow() {
    let c = ctx();
    let s = c.create_store(&[4], F64).unwrap();
    let cases = [(i64::MAX, 1), (2, i64::MAX)];
    for (off, ext) in cases {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            View::new(&s, pt(&[off]), sh(&[ext])).map(|v| v.bounds())
        }));
        assert!(
            matches!(r, Ok(Err(IrError::ViewOutOfBounds { .. }))),
            "View::new(offset {off}, shape {ext}) on a size-4 store: {:?}",
            r.map(|x| x.map_err(|e| e.to_string()))
        );
    }
}

#[test]
fn huge_launches_are_rejected_without_overflow() {
    let c = ctx();
    let k = kind("huge-launch", &[(F64, W)]);
    let s = c.create_store(&[4], F64).unwrap();
    let t = IndexTask::new(&k, sh(&[1 << 32, 1 << 32])).arg(&s, Partition::replicate(), W);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| validate(&t)));
    assert!(
        matches!(r, Ok(Err(IrError::TooLarge { .. }))),
        "a 2^64-point write through Replicate: {:?}",
        r.map(|x| x.map_err(|e| e.to_string()))
    );
}

#[test]
fn stores_too_large_to_address_are_rejected() {
    let c = ctx();
    let r = c.create_store(&[1 << 40, 1 << 40], F64);
    assert!(matches!(r, Err(IrError::TooLarge { .. })), "{r:?}");
    let msg = r.unwrap_err().to_string();
    assert!(msg.contains("(1099511627776, 1099511627776)"), "{msg}");
}

/// A detached context creates stores and accepts nothing to run: submitting, reading and
/// writing are backend errors naming the detached runtime, flushing is a no-op.
#[test]
fn a_detached_context_builds_but_runs_nothing() {
    let c = diffuse_ir::Context::detached();
    let s = c.create_store(&[4], DType::F64).unwrap();
    let k = crate::common::kind("detached", &[(DType::F64, Privilege::Write)]);
    let launch = diffuse_ir::Tuple::shape(&[2]).unwrap();
    let task = diffuse_ir::IndexTask::new(&k, launch).arg(
        &s,
        s.view().blocked(launch).unwrap(),
        Privilege::Write,
    );
    for err in [
        c.submit(task).unwrap_err(),
        c.read::<f64>(&s.view()).unwrap_err(),
        c.write(&s.view(), vec![0.0f64; 4]).unwrap_err(),
    ] {
        assert!(
            matches!(&err, IrError::Backend { backend, .. } if backend == "detached"),
            "{err:?}"
        );
    }
    c.flush_window().unwrap();
}

#[test]
fn writes_go_through_an_image_only_when_its_boxes_are_disjoint() {
    let c = ctx();
    let k = kind("image-write", &[(F64, R), (F64, W)]);
    let a = c.create_store(&[8], F64).unwrap();
    let out = c.create_store(&[8], F64).unwrap();
    let span = |lo: i64, hi: i64| Rect {
        lo: Tuple::splat(1, lo),
        hi: Tuple::splat(1, hi),
    };
    let launch = sh(&[3]);
    let task = |boxes: Vec<Rect>| {
        let image = Partition::image(launch, boxes).unwrap();
        IndexTask::new(&k, launch)
            .arg(&a, a.view().blocked(launch).unwrap(), R)
            .arg(&out, image, W)
    };
    // Runs of a compaction, one of them empty, listed out of order.
    validate(&task(vec![span(5, 8), span(0, 5), span(5, 5)]))
        .expect("disjoint boxes may be written");
    // A halo: boxes 0 and 1 share element 3.
    let err = validate(&task(vec![span(0, 4), span(3, 6), span(6, 8)])).unwrap_err();
    assert!(
        matches!(&err, IrError::WriteThroughImage { arg: 1, store, privilege: Privilege::Write, .. } if *store == out.id()),
        "{err:?}"
    );
    assert_mentions_all(&err, &[k.name(), "argument 1", "overlap"]);
    // Two-dimensional boxes that touch without sharing an element are disjoint.
    let grid = |lo: [i64; 2], hi: [i64; 2]| Rect {
        lo: Tuple::new(&lo).unwrap(),
        hi: Tuple::new(&hi).unwrap(),
    };
    let side_by_side =
        Partition::image(sh(&[2]), vec![grid([0, 0], [4, 2]), grid([0, 2], [4, 4])]).unwrap();
    let crossing =
        Partition::image(sh(&[2]), vec![grid([0, 0], [4, 3]), grid([1, 2], [3, 4])]).unwrap();
    let disjoint = |p: &Partition| matches!(p.kind(), PartitionKind::Image(i) if i.disjoint);
    assert!(disjoint(&side_by_side) && !disjoint(&crossing));
}
