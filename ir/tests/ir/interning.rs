//! Interning: equal descriptions give identical handles, whatever path built them; different
//! descriptions give different handles.

use std::collections::HashSet;

use diffuse_ir::{DType, Partition, ProjComponent, Projection, View};
use proptest::prelude::*;

use crate::common::{ctx, pt, sh};

#[test]
fn equal_projections_are_identical_whatever_the_constructor() {
    let a = Projection::identity(2).unwrap();
    let b = Projection::permutation(&[0, 1]).unwrap();
    let c = Projection::select_dims(2, &[0, 1]).unwrap();
    let d = Projection::new(2, &[ProjComponent::Dim(0), ProjComponent::Dim(1)]).unwrap();
    assert_eq!(a, b);
    assert_eq!(a, c);
    assert_eq!(a, d);

    let k1 = Projection::constant(3, &[0, 2]).unwrap();
    let k2 = Projection::new(3, &[ProjComponent::Const(0), ProjComponent::Const(2)]).unwrap();
    assert_eq!(k1, k2);

    let set: HashSet<Projection> = [a.clone(), b, c, d, k1, k2].into_iter().collect();
    assert_eq!(set.len(), 2);
}

#[test]
fn different_projections_are_unequal() {
    let id2 = Projection::identity(2).unwrap();
    let swap = Projection::permutation(&[1, 0]).unwrap();
    let drop_col = Projection::select_dims(2, &[0]).unwrap();
    let id1 = Projection::identity(1).unwrap();
    let const0 = Projection::constant(2, &[0]).unwrap();
    let drop_col_3d = Projection::select_dims(3, &[0]).unwrap();
    let all = [id2, swap, drop_col, id1, const0, drop_col_3d];
    for (i, x) in all.iter().enumerate() {
        for (j, y) in all.iter().enumerate() {
            assert_eq!(i == j, x == y, "{x:?} vs {y:?}");
        }
    }
}

#[test]
fn equal_partitions_are_identical_whatever_the_construction_path() {
    let c = ctx();
    let s = c.create_store(&[8, 6], DType::F64).unwrap();
    let other = c.create_store(&[8, 6], DType::I32).unwrap();

    let direct =
        Partition::tiling(sh(&[4, 3]), pt(&[0, 0]), Projection::identity(2).unwrap()).unwrap();
    let via_perm = Partition::tiling(
        sh(&[4, 3]),
        pt(&[0, 0]),
        Projection::permutation(&[0, 1]).unwrap(),
    )
    .unwrap();
    let blocked = s.view().blocked(sh(&[2, 2])).unwrap();
    let blocked_other_store = other.view().blocked(sh(&[2, 2])).unwrap();
    let tiled = s
        .view()
        .tiling_with(sh(&[4, 3]), Projection::identity(2).unwrap())
        .unwrap();
    // A view built explicitly over the whole store is the whole store.
    let explicit_whole = View::new(&s, pt(&[0, 0]), sh(&[8, 6]))
        .unwrap()
        .blocked(sh(&[2, 2]))
        .unwrap();
    for p in [
        &via_perm,
        &blocked,
        &blocked_other_store,
        &tiled,
        &explicit_whole,
    ] {
        assert_eq!(&direct, p);
    }

    // View tilings: same offset and extent in different stores, different paths.
    let v1 = View::new(&s, pt(&[2, 1]), sh(&[5, 4])).unwrap();
    let v2 = View::new(&other, pt(&[1, 0]), sh(&[7, 6]))
        .unwrap()
        .subview(pt(&[1, 1]), sh(&[5, 4]))
        .unwrap();
    let explicit = Partition::tiling_of_view(
        sh(&[3, 2]),
        pt(&[2, 1]),
        Projection::identity(2).unwrap(),
        sh(&[5, 4]),
    )
    .unwrap();
    assert_eq!(v1.blocked(sh(&[2, 2])).unwrap(), explicit);
    assert_eq!(v2.blocked(sh(&[2, 2])).unwrap(), explicit);

    assert_eq!(Partition::replicate(), Partition::replicate());
    assert_eq!(s.view().whole(3).unwrap(), Partition::replicate());
    // Two whole-view broadcasts of equal views in different stores.
    assert_eq!(v1.whole(1).unwrap(), v2.whole(1).unwrap());

    let set: HashSet<Partition> = [direct, blocked, explicit, v1.blocked(sh(&[2, 2])).unwrap()]
        .into_iter()
        .collect();
    assert_eq!(set.len(), 2);
}

#[test]
fn different_partitions_are_unequal() {
    let id1 = Projection::identity(1).unwrap();
    let all = [
        Partition::replicate(),
        Partition::tiling(sh(&[2]), pt(&[0]), id1.clone()).unwrap(),
        Partition::tiling(sh(&[3]), pt(&[0]), id1.clone()).unwrap(),
        Partition::tiling(sh(&[2]), pt(&[1]), id1.clone()).unwrap(),
        Partition::tiling(
            sh(&[2]),
            pt(&[0]),
            Projection::select_dims(2, &[0]).unwrap(),
        )
        .unwrap(),
        Partition::tiling(sh(&[2]), pt(&[0]), Projection::constant(1, &[0]).unwrap()).unwrap(),
        Partition::tiling_of_view(sh(&[2]), pt(&[0]), id1.clone(), sh(&[4])).unwrap(),
        Partition::tiling_of_view(sh(&[2]), pt(&[0]), id1, sh(&[5])).unwrap(),
    ];
    for (i, x) in all.iter().enumerate() {
        for (j, y) in all.iter().enumerate() {
            assert_eq!(i == j, x == y, "{x:?} vs {y:?}");
        }
    }
}

#[test]
fn interning_agrees_across_threads() {
    let handles: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(|| {
                let proj = Projection::permutation(&[2, 0, 1]).unwrap();
                Partition::tiling_of_view(sh(&[3, 5, 7]), pt(&[1, 2, 3]), proj, sh(&[11, 13, 17]))
                    .unwrap()
            })
        })
        .collect();
    let parts: Vec<Partition> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for p in &parts {
        assert_eq!(p, &parts[0]);
    }
}

/// `(tile, offset, permutation, clip)` of a tiling.
type TilingDesc = (Vec<i64>, Vec<i64>, Vec<usize>, Option<Vec<i64>>);

/// A tiling description drawn from a small space, so that collisions are frequent.
fn small_tiling() -> impl Strategy<Value = TilingDesc> {
    (1usize..=2).prop_flat_map(|dims| {
        (
            prop::collection::vec(1i64..=2, dims),
            prop::collection::vec(0i64..=1, dims),
            Just((0..dims).collect::<Vec<usize>>()).prop_shuffle(),
            prop::option::of(prop::collection::vec(0i64..=1, dims)),
        )
    })
}

fn build((tile, offset, perm, clip): &TilingDesc) -> Partition {
    let proj = Projection::permutation(perm).unwrap();
    match clip {
        None => Partition::tiling(sh(tile), pt(offset), proj).unwrap(),
        Some(c) => Partition::tiling_of_view(sh(tile), pt(offset), proj, sh(c)).unwrap(),
    }
}

proptest! {
    #[test]
    fn partition_handles_are_equal_iff_descriptions_are(a in small_tiling(), b in small_tiling()) {
        let (pa, pb) = (build(&a), build(&b));
        prop_assert_eq!(pa == pb, a == b, "{:?} / {:?}", a, b);
        prop_assert_eq!(pa == build(&a), true);
        prop_assert_eq!(pa.kind() == pb.kind(), a == b);
    }
}
