//! Sub-store bounds of the Figure 4 examples (`[proj(p) * tile, (proj(p) + 1) * tile) +
//! offset`, clipped), `Replicate`, tilings of views, and 0-d stores.

use diffuse_ir::{validate, DType, IndexTask, Partition, Privilege, Projection, Rect, Tuple};

use crate::common::{ctx, kind, pt, rect, sh};

/// The sub-store of every launch point, in row-major launch order.
fn all_sub_stores(part: &Partition, store: &[i64], launch: &[i64]) -> Vec<(Vec<i64>, Rect)> {
    Rect::from_shape(sh(launch))
        .points()
        .map(|p| (p.as_slice().to_vec(), part.sub_store(sh(store), &p)))
        .collect()
}

/// `part` gives every launch point of `launch` its sub-store in `want` (row-major launch
/// order) of a `store`-shaped store, is that store's blocked tiling over `launch`, and is a
/// valid write partition of an index task over `launch`.
fn check_blocked_write(
    name: &str,
    part: Partition,
    store: &[i64],
    launch: &[i64],
    want: Vec<(Vec<i64>, Rect)>,
) {
    assert_eq!(all_sub_stores(&part, store, launch), want, "{name}");
    let c = ctx();
    let s = c.create_store(store, DType::F64).unwrap();
    assert_eq!(s.view().blocked(sh(launch)).unwrap(), part, "{name}");
    let k = kind(name, &[(DType::F64, Privilege::Write)]);
    let t = IndexTask::new(&k, sh(launch)).arg(&s, part, Privilege::Write);
    if let Err(e) = validate(&t) {
        panic!("{name} is not a valid write partition: {e:?}");
    }
}

#[test]
fn fig4a_2x2_tiles_of_a_4x4_store_over_a_2x2_domain() {
    let part =
        Partition::tiling(sh(&[2, 2]), pt(&[0, 0]), Projection::identity(2).unwrap()).unwrap();
    let want = vec![
        (vec![0, 0], rect(&[0, 0], &[2, 2])),
        (vec![0, 1], rect(&[0, 2], &[2, 4])),
        (vec![1, 0], rect(&[2, 0], &[4, 2])),
        (vec![1, 1], rect(&[2, 2], &[4, 4])),
    ];
    check_blocked_write("fig4a", part, &[4, 4], &[2, 2], want);
}

#[test]
fn fig4b_1x4_row_tiles_of_a_4x4_store_over_a_4x1_domain() {
    let part =
        Partition::tiling(sh(&[1, 4]), pt(&[0, 0]), Projection::identity(2).unwrap()).unwrap();
    let want = vec![
        (vec![0, 0], rect(&[0, 0], &[1, 4])),
        (vec![1, 0], rect(&[1, 0], &[2, 4])),
        (vec![2, 0], rect(&[2, 0], &[3, 4])),
        (vec![3, 0], rect(&[3, 0], &[4, 4])),
    ];
    check_blocked_write("fig4b", part, &[4, 4], &[4, 1], want);
}

#[test]
fn fig4c_1x1_tiles_offset_by_1_1_over_a_3x3_domain() {
    let part =
        Partition::tiling(sh(&[1, 1]), pt(&[1, 1]), Projection::identity(2).unwrap()).unwrap();
    let got = all_sub_stores(&part, &[4, 4], &[3, 3]);
    let mut want = Vec::new();
    for i in 0..3 {
        for j in 0..3 {
            want.push((vec![i, j], rect(&[1 + i, 1 + j], &[2 + i, 2 + j])));
        }
    }
    assert_eq!(got, want);
    // Spelled out for two corners, so a systematic error in the loop above cannot hide.
    assert_eq!(got[0].1, rect(&[1, 1], &[2, 2]));
    assert_eq!(got[8].1, rect(&[3, 3], &[4, 4]));

    let c = ctx();
    let s = c.create_store(&[4, 4], DType::F64).unwrap();
    let k = kind("fig4c", &[(DType::F64, Privilege::Write)]);
    let t = IndexTask::new(&k, sh(&[3, 3])).arg(&s, part.clone(), Privilege::Write);
    validate(&t).expect("Figure 4(c) over its 3x3 domain is valid");

    // The same region as a view, blocked: a different (clipped) description, same sub-stores.
    let view = diffuse_ir::View::new(&s, pt(&[1, 1]), sh(&[3, 3])).unwrap();
    let blocked = view.blocked(sh(&[3, 3])).unwrap();
    assert_ne!(blocked, part, "a view tiling carries its clip");
    assert_eq!(all_sub_stores(&blocked, &[4, 4], &[3, 3]), want);
}

#[test]
fn fig4d_vector_tiled_over_a_2x2_domain_drops_the_second_dim() {
    let proj = Projection::select_dims(2, &[0]).unwrap();
    assert_eq!(proj.in_dims(), 2);
    assert_eq!(proj.out_dims(), 1);
    let part = Partition::tiling(sh(&[2]), pt(&[0]), proj).unwrap();
    let got = all_sub_stores(&part, &[4], &[2, 2]);
    let want = vec![
        (vec![0, 0], rect(&[0], &[2])),
        (vec![0, 1], rect(&[0], &[2])),
        (vec![1, 0], rect(&[2], &[4])),
        (vec![1, 1], rect(&[2], &[4])),
    ];
    assert_eq!(got, want);
    for i in 0..2 {
        assert_eq!(
            part.sub_store(sh(&[4]), &pt(&[i, 0])),
            part.sub_store(sh(&[4]), &pt(&[i, 1])),
            "points ({i}, 0) and ({i}, 1) share a tile"
        );
    }

    // Reading through the aliased partition is fine.
    let c = ctx();
    let v = c.create_store(&[4], DType::F64).unwrap();
    let k = kind("fig4d", &[(DType::F64, Privilege::Read)]);
    let t = IndexTask::new(&k, sh(&[2, 2])).arg(&v, part, Privilege::Read);
    validate(&t).expect("reading a partially aliased partition is valid");
}

#[test]
fn tiling_follows_the_figure_4e_formula_and_clips_an_uneven_last_tile_to_the_store() {
    // Size-5 store, tile 2, launch 3: the last tile [4, 6) is clipped to [4, 5).
    let part = Partition::tiling(sh(&[2]), pt(&[0]), Projection::identity(1).unwrap()).unwrap();
    let got: Vec<Rect> = all_sub_stores(&part, &[5], &[3])
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    assert_eq!(
        got,
        vec![rect(&[0], &[2]), rect(&[2], &[4]), rect(&[4], &[5])]
    );
    // The unclipped tile is exactly the Figure 4(e) box.
    let t = part.as_tiling().unwrap();
    assert_eq!(t.tile_rect(&pt(&[2])), rect(&[4], &[6]));

    // A permuted projection swaps which launch coordinate picks the row/column tile.
    let tr = Partition::tiling(
        sh(&[1, 2]),
        pt(&[0, 0]),
        Projection::permutation(&[1, 0]).unwrap(),
    )
    .unwrap();
    assert_eq!(
        tr.sub_store(sh(&[4, 4]), &pt(&[0, 3])),
        rect(&[3, 0], &[4, 2])
    );
    assert_eq!(
        tr.sub_store(sh(&[4, 4]), &pt(&[1, 2])),
        rect(&[2, 2], &[3, 4])
    );

    // A constant projection broadcasts one tile to every point.
    let bc = Partition::tiling(sh(&[2]), pt(&[1]), Projection::constant(2, &[1]).unwrap()).unwrap();
    for p in Rect::from_shape(sh(&[3, 2])).points() {
        assert_eq!(bc.sub_store(sh(&[6]), &p), rect(&[3], &[5]));
    }
}

#[test]
fn replicate_gives_every_point_the_whole_store() {
    let part = Partition::replicate();
    assert!(part.as_tiling().is_none());
    for p in Rect::from_shape(sh(&[3, 2])).points() {
        assert_eq!(part.sub_store(sh(&[5, 7]), &p), rect(&[0, 0], &[5, 7]));
    }
    assert_eq!(part.reachable_bounds(sh(&[5, 7])), rect(&[0, 0], &[5, 7]));

    // A whole-store view seen whole is Replicate.
    let c = ctx();
    let s = c.create_store(&[5, 7], DType::F64).unwrap();
    assert_eq!(s.view().whole(2).unwrap(), part);
}

#[test]
fn a_view_seen_whole_broadcasts_the_view_not_the_store() {
    let c = ctx();
    let s = c.create_store(&[6, 6], DType::F64).unwrap();
    let v = diffuse_ir::View::new(&s, pt(&[1, 2]), sh(&[3, 4])).unwrap();
    let part = v.whole(1).unwrap();
    for i in 0..4 {
        assert_eq!(
            part.sub_store(sh(&[6, 6]), &pt(&[i])),
            rect(&[1, 2], &[4, 6])
        );
    }
}

#[test]
fn tiling_of_a_view_clips_uneven_last_tiles_to_the_view_not_just_the_store() {
    // View [2, 7) of a size-10 store blocked over 2 points: tile 3, so the last tile [5, 8)
    // must stop at the view's end 7 (the store would allow 8).
    let c = ctx();
    let s = c.create_store(&[10], DType::F64).unwrap();
    let v = diffuse_ir::View::new(&s, pt(&[2]), sh(&[5])).unwrap();
    let part = v.blocked(sh(&[2])).unwrap();
    let t = part.as_tiling().expect("a blocked view is a tiling");
    assert_eq!(t.tile, sh(&[3]));
    assert_eq!(t.offset, pt(&[2]));
    assert_eq!(t.clip, Some(sh(&[5])));
    assert_eq!(part.sub_store(sh(&[10]), &pt(&[0])), rect(&[2], &[5]));
    assert_eq!(part.sub_store(sh(&[10]), &pt(&[1])), rect(&[5], &[7]));
    assert_eq!(part.reachable_bounds(sh(&[10])), rect(&[2], &[7]));

    // The explicit constructor gives the same interned partition.
    let direct = Partition::tiling_of_view(
        sh(&[3]),
        pt(&[2]),
        Projection::identity(1).unwrap(),
        sh(&[5]),
    )
    .unwrap();
    assert_eq!(direct, part);

    // 2-D: view [1..6) x [0..3) of a 8x8 store over a 2x2 launch: tiles 3x2, last ones clipped
    // to the view in both dimensions.
    let s2 = c.create_store(&[8, 8], DType::F64).unwrap();
    let v2 = diffuse_ir::View::new(&s2, pt(&[1, 0]), sh(&[5, 3])).unwrap();
    let p2 = v2.blocked(sh(&[2, 2])).unwrap();
    let got: Vec<(Vec<i64>, Rect)> = all_sub_stores(&p2, &[8, 8], &[2, 2]);
    assert_eq!(
        got,
        vec![
            (vec![0, 0], rect(&[1, 0], &[4, 2])),
            (vec![0, 1], rect(&[1, 2], &[4, 3])),
            (vec![1, 0], rect(&[4, 0], &[6, 2])),
            (vec![1, 1], rect(&[4, 2], &[6, 3])),
        ]
    );

    // A subview's offset is relative to its parent view.
    let sub = v2.subview(pt(&[1, 1]), sh(&[2, 2])).unwrap();
    assert_eq!(sub.offset(), pt(&[2, 1]));
    assert_eq!(sub.bounds(), rect(&[2, 1], &[4, 3]));
}

#[test]
fn zero_d_stores_have_a_single_element_under_replicate_and_a_0d_tiling() {
    let c = ctx();
    let s = c.create_store(&[], DType::F64).unwrap();
    assert_eq!(s.shape(), Tuple::scalar());
    assert_eq!(s.shape().volume(), 1);
    assert_eq!(s.size_bytes(), 8);

    let whole = Rect::from_shape(Tuple::scalar());
    assert_eq!(whole.volume(), 1);
    assert!(!whole.is_empty());

    // Replicate, over a 0-d and a 1-d launch domain.
    let rep = Partition::replicate();
    let sub = rep.sub_store(s.shape(), &Tuple::scalar());
    assert_eq!(sub, whole);
    assert_eq!(sub.points().count(), 1);
    assert_eq!(rep.sub_store(s.shape(), &pt(&[2])).points().count(), 1);

    // A 0-d tiling (no tile dims, no color dims), built directly and by blocking the view.
    let tiling = Partition::tiling(
        Tuple::scalar(),
        Tuple::scalar(),
        Projection::identity(0).unwrap(),
    )
    .unwrap();
    assert_eq!(s.view().blocked(Tuple::scalar()).unwrap(), tiling);
    let sub = tiling.sub_store(s.shape(), &Tuple::scalar());
    assert_eq!(sub, whole);
    assert_eq!(sub.points().collect::<Vec<_>>(), vec![Tuple::scalar()]);

    // Both are accepted for writing in a 0-d (single-point) launch.
    let k = kind("zero-d", &[(DType::F64, Privilege::Write)]);
    for part in [rep, tiling] {
        let t = IndexTask::new(&k, Tuple::scalar()).arg(&s, part.clone(), Privilege::Write);
        validate(&t).unwrap_or_else(|e| panic!("0-d write through {part:?} rejected: {e}"));
    }

    // A 0-d tiling read from every point of a 1-d launch.
    let proj = Projection::new(1, &[]).unwrap();
    let bcast = Partition::tiling(Tuple::scalar(), Tuple::scalar(), proj).unwrap();
    for i in 0..3 {
        assert_eq!(bcast.sub_store(s.shape(), &pt(&[i])), whole);
    }
    let kr = kind("zero-d-read", &[(DType::F64, Privilege::Read)]);
    let t = IndexTask::new(&kr, sh(&[3])).arg(&s, bcast, Privilege::Read);
    validate(&t).expect("every point may read the 0-d store");
}
