//! Property: a blocked tiling of a view that validation accepts splits the view into disjoint
//! sub-stores that cover it exactly (every element once, nothing outside the view); one it
//! rejects really has a launch point with an empty tile.

use diffuse_ir::{
    validate, DType, IndexTask, IrError, Partition, Privilege, Projection, Rect, View,
};
use proptest::prelude::*;

use crate::common::{ctx, kind, pt, sh};

/// `(store extents, [(view offset, view extent, launch extent)] per dim)`.
fn blocked_case() -> impl Strategy<Value = (Vec<i64>, Vec<(i64, i64, i64)>)> {
    prop::collection::vec(1i64..=40, 1..=3).prop_flat_map(|store| {
        let per_dim: Vec<_> = store
            .iter()
            .map(|&n| {
                // The view's extent in this dim: often the whole dim (so whole-store views and
                // large volumes are common), otherwise a random window.
                let window = prop_oneof![
                    1 => Just((0, n)),
                    2 => (0..n).prop_flat_map(move |o| (Just(o), 1..=n - o)),
                ];
                (window, 1..=n.min(6)).prop_map(|((o, e), l)| (o, e, l))
            })
            .collect();
        (Just(store), per_dim)
    })
}

fn row_major_index(store: &[i64], p: &[i64]) -> usize {
    let mut idx = 0i64;
    for (d, &c) in p.iter().enumerate() {
        idx = idx * store[d] + c;
    }
    idx as usize
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn accepted_blocked_tilings_partition_the_view_exactly((store_ext, dims) in blocked_case()) {
        let rank = store_ext.len();
        let offset: Vec<i64> = dims.iter().map(|d| d.0).collect();
        let vext: Vec<i64> = dims.iter().map(|d| d.1).collect();
        let launch_ext: Vec<i64> = dims.iter().map(|d| d.2).collect();

        let c = ctx();
        let store = c.create_store(&store_ext, DType::F64).unwrap();
        let view = View::new(&store, pt(&offset), sh(&vext)).unwrap();
        let launch = sh(&launch_ext);
        let part = view.blocked(launch).unwrap();

        let k = kind(&format!("cover-{rank}d"), &[(DType::F64, Privilege::Write)]);
        let task = IndexTask::new(&k, launch).arg(&store, part.clone(), Privilege::Write);

        let subs: Vec<Rect> = Rect::from_shape(launch)
            .points()
            .map(|p| part.sub_store(store.shape(), &p))
            .collect();
        prop_assert_eq!(subs.len() as i64, launch.volume());

        match validate(&task) {
            Ok(()) => {
                let vb = view.bounds();
                // Every sub-store is a non-empty box inside the view.
                for r in &subs {
                    prop_assert!(!r.is_empty(), "empty sub-store {} accepted", r);
                    prop_assert_eq!(r.intersect(&vb), *r, "sub-store {} leaves view {}", r, vb);
                }
                // Pairwise disjoint.
                for (i, a) in subs.iter().enumerate() {
                    for b in &subs[i + 1..] {
                        prop_assert!(a.intersect(b).is_empty(), "{} and {} overlap", a, b);
                    }
                }
                // Each element of the store is covered once if it is in the view, never
                // otherwise.
                let mut count = vec![0u32; store.shape().volume() as usize];
                for r in &subs {
                    for p in r.points() {
                        count[row_major_index(&store_ext, p.as_slice())] += 1;
                    }
                }
                for e in store.bounds().points() {
                    let want = u32::from(vb.contains(&e));
                    let got = count[row_major_index(&store_ext, e.as_slice())];
                    prop_assert_eq!(got, want, "element {} covered {} times", e, got);
                }
                let total: i64 = subs.iter().map(Rect::volume).sum();
                prop_assert_eq!(total, view.shape().volume());
            }
            Err(e) => {
                prop_assert!(
                    matches!(e, IrError::TilingOutOfBounds { arg: 0, .. }),
                    "unexpected rejection: {}", e
                );
                prop_assert!(
                    subs.iter().any(Rect::is_empty),
                    "rejected although every launch point has a non-empty tile: {}", e
                );
            }
        }
    }

    /// Sub-stores of an arbitrary identity-projected tiling of a whole store are the Figure 4(e)
    /// boxes clipped to `[offset, store)`.
    #[test]
    fn tiling_sub_stores_follow_the_formula(
        dims in prop::collection::vec((1i64..=12, 1i64..=5, 0i64..=4, 0i64..=4), 1..=3)
    ) {
        let store: Vec<i64> = dims.iter().map(|d| d.0).collect();
        let tile: Vec<i64> = dims.iter().map(|d| d.1).collect();
        let offset: Vec<i64> = dims.iter().map(|d| d.2).collect();
        let color: Vec<i64> = dims.iter().map(|d| d.3).collect();
        let rank = store.len();
        let part = Partition::tiling(sh(&tile), pt(&offset), Projection::identity(rank).unwrap())
            .unwrap();
        let got = part.sub_store(sh(&store), &pt(&color));
        for d in 0..rank {
            let lo = (color[d] * tile[d] + offset[d]).min(store[d]).max(offset[d]);
            let hi = ((color[d] + 1) * tile[d] + offset[d]).min(store[d]);
            let ext = (hi - lo).max(0);
            prop_assert_eq!(got.extent()[d], ext, "dim {} of {}", d, got);
            if ext > 0 {
                prop_assert_eq!(got.lo[d], lo);
                prop_assert_eq!(got.hi[d], hi);
            }
        }
    }
}

/// A random partition of a small store: Replicate, or a tiling with random tile, offset,
/// projection (each store dim either a launch dim, possibly repeated, or a small constant) and
/// optional clip.
fn any_partition_case() -> impl Strategy<Value = (Vec<i64>, Vec<i64>, Partition)> {
    (1usize..=2, 1usize..=2).prop_flat_map(|(rank, launch_rank)| {
        let store = prop::collection::vec(1i64..=9, rank);
        let launch = prop::collection::vec(1i64..=4, launch_rank);
        let comps = prop::collection::vec(
            prop_oneof![
                3 => (0..launch_rank).prop_map(diffuse_ir::ProjComponent::Dim),
                1 => (0i64..=1).prop_map(diffuse_ir::ProjComponent::Const),
            ],
            rank,
        );
        let tile = prop::collection::vec(1i64..=9, rank);
        let offset = prop::collection::vec(prop_oneof![3 => Just(0i64), 1 => 0i64..=2], rank);
        let clip = prop::option::of(prop::collection::vec(0i64..=9, rank));
        (store, launch, comps, tile, offset, clip, any::<bool>()).prop_map(
            move |(store, launch, comps, tile, offset, clip, replicate)| {
                let part = if replicate {
                    Partition::replicate()
                } else {
                    let proj = Projection::new(launch_rank, &comps).unwrap();
                    match clip {
                        None => Partition::tiling(sh(&tile), pt(&offset), proj),
                        Some(c) => Partition::tiling_of_view(sh(&tile), pt(&offset), proj, sh(&c)),
                    }
                    .unwrap()
                };
                (store, launch, part)
            },
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// `Partition::covers` (decided from the description alone) agrees with enumerating the
    /// sub-stores of every launch point and checking that their union is the whole store.
    #[test]
    fn covers_agrees_with_enumerating_sub_stores((store, launch, part) in any_partition_case()) {
        let store = sh(&store);
        let launch = sh(&launch);
        let mut covered = vec![false; store.volume() as usize];
        for p in Rect::from_shape(launch).points() {
            for e in part.sub_store(store, &p).points() {
                covered[row_major_index(store.as_slice(), e.as_slice())] = true;
            }
        }
        let enumerated = covered.iter().all(|&c| c);
        prop_assert_eq!(part.covers(store, launch), enumerated, "{:?} over {}", part, launch);
    }
}
