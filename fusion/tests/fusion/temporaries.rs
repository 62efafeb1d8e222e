//! Temporaries (the Definition of §5.1): a store is temporary in a fused prefix only if every
//! read of it in the prefix follows a covering write through the same partition, no later
//! task of the window uses it, the application holds no handle to it, and it is not reduced.
//! Each case pairs a store that is not temporary with a control that is.

use diffuse_fusion::Violation;
use diffuse_ir::{Partition, Projection, Store};

use crate::common::{
    analyse, blocked, ctx, group, pt, sh, store, task, temporaries, view_blocked, R, RW, SUM, W,
};

const L: [i64; 1] = [4];

/// A live output store and a fresh store `t` (handle still held: drop it to make it a
/// candidate), both of 16 elements, and their blocked tiling over `L`.
fn setup() -> (Store, Store, Partition) {
    let c = ctx();
    let out = store(&c, &[16]);
    let t = store(&c, &[16]);
    let p = blocked(&out, &L);
    (out, t, p)
}

#[test]
fn a_covering_write_then_a_read_makes_a_temporary() {
    let (out, t, p) = setup();
    assert!(p.covers(t.shape(), sh(&L)));
    let window = [
        task(&L, &[(&t, &p, W)]),
        task(&L, &[(&t, &p, R), (&out, &p, W)]),
    ];
    let id = t.id();
    drop(t);
    assert_eq!(temporaries(&window, 2), vec![id]);
    assert_eq!(analyse(&window).groups, vec![group(0..2, &[id], None)]);
    // The bound is clamped to the window.
    assert_eq!(temporaries(&window, 10), vec![id]);
}

#[test]
fn a_write_to_a_sub_view_is_not_covering() {
    let (out, t, p) = setup();
    let half = view_blocked(&t, &[0], &[8], &L);
    assert!(!half.covers(t.shape(), sh(&L)));
    let window = [
        task(&L, &[(&t, &half, W)]),
        task(&L, &[(&t, &half, R), (&out, &p, W)]),
    ];
    let id = t.id();
    drop(t);
    assert_eq!(analyse(&window).groups, vec![group(0..2, &[], None)]);
    assert!(!temporaries(&window, 2).contains(&id));
}

#[test]
fn a_tiling_whose_tiles_miss_part_of_the_store_is_not_covering() {
    let (out, t, p) = setup();
    // Tiles of 2 over 4 points reach only the first 8 of 16 elements.
    let short = Partition::tiling(sh(&[2]), pt(&[0]), Projection::identity(1).unwrap()).unwrap();
    assert!(!short.covers(t.shape(), sh(&L)));
    let window = [
        task(&L, &[(&t, &short, W)]),
        task(&L, &[(&t, &short, R), (&out, &p, W)]),
    ];
    drop(t);
    assert_eq!(temporaries(&window, 2), vec![]);
}

#[test]
fn a_replicated_write_over_one_point_covers() {
    let (out, t, _) = setup();
    let rep = Partition::replicate();
    let window = [
        task(&[1], &[(&t, &rep, W)]),
        task(&[1], &[(&t, &rep, R), (&out, &rep, W)]),
    ];
    let id = t.id();
    drop(t);
    assert_eq!(temporaries(&window, 2), vec![id]);
}

#[test]
fn a_read_before_the_write_is_not_temporary() {
    let (out, t, p) = setup();
    let window = [
        task(&L, &[(&t, &p, R), (&out, &p, W)]),
        task(&L, &[(&t, &p, W)]),
        task(&L, &[(&t, &p, R), (&out, &p, RW)]),
    ];
    // A read-write is a read before any write too.
    let rw_first = [
        task(&L, &[(&t, &p, RW)]),
        task(&L, &[(&t, &p, R), (&out, &p, W)]),
    ];
    drop(t);
    assert_eq!(analyse(&window).groups, vec![group(0..3, &[], None)]);
    assert_eq!(temporaries(&rw_first, 2), vec![]);
}

#[test]
fn a_store_used_after_the_prefix_is_not_temporary() {
    let (out, t, p) = setup();
    let p2 = blocked(&t, &[2]);
    let produce = task(&L, &[(&t, &p, W)]);
    let consume = task(&L, &[(&t, &p, R), (&out, &p, W)]);
    // Another launch domain: this read stays out of the group but is still pending.
    let later = task(&[2], &[(&t, &p2, R), (&out, &p2, RW)]);
    let id = t.id();
    drop(t);
    let window = [produce.clone(), consume.clone(), later];
    assert_eq!(
        analyse(&window).groups,
        vec![
            group(0..2, &[], Some(Violation::LaunchDomain)),
            group(2..3, &[], None),
        ]
    );
    assert_eq!(temporaries(&window, 2), vec![]);
    // Control: without the later task, t is temporary.
    assert_eq!(temporaries(&[produce, consume], 2), vec![id]);
}

#[test]
fn a_store_the_application_holds_is_not_temporary() {
    let (out, t, p) = setup();
    let window = [
        task(&L, &[(&t, &p, W)]),
        task(&L, &[(&t, &p, R), (&out, &p, W)]),
    ];
    let id = t.id();
    let view = t.view();
    drop(t);
    // A view holds a handle as well.
    assert_eq!(temporaries(&window, 2), vec![]);
    assert_eq!(analyse(&window).groups, vec![group(0..2, &[], None)]);
    // The same tasks once the last handle is gone: liveness is read at analysis time.
    drop(view);
    assert_eq!(temporaries(&window, 2), vec![id]);
}

#[test]
fn a_reduced_store_is_not_temporary() {
    let c = ctx();
    let (out, t, p) = setup();
    let scalar = c.create_store(&[], diffuse_ir::DType::F64).unwrap();
    let rep = Partition::replicate();
    let window = [
        task(&L, &[(&out, &p, R), (&scalar, &rep, SUM)]),
        task(&L, &[(&out, &p, R), (&scalar, &rep, SUM)]),
        task(&L, &[(&out, &p, R), (&t, &p, SUM)]),
    ];
    // Control: the same stores written (covering) and read are temporaries.
    let control = [
        task(&[1], &[(&scalar, &rep, W)]),
        task(&[1], &[(&scalar, &rep, R), (&out, &rep, W)]),
    ];
    let sid = scalar.id();
    drop((scalar, t));
    assert_eq!(analyse(&window).groups, vec![group(0..3, &[], None)]);
    assert_eq!(temporaries(&control, 2), vec![sid]);
}

#[test]
fn temporaries_come_in_order_of_first_appearance() {
    let c = ctx();
    let (out, _, p) = setup();
    let (a, b, d) = (store(&c, &[16]), store(&c, &[16]), store(&c, &[16]));
    let window = [
        task(&L, &[(&b, &p, W)]),
        task(&L, &[(&b, &p, R), (&d, &p, W)]),
        task(&L, &[(&a, &p, W), (&d, &p, R)]),
        task(&L, &[(&a, &p, R), (&b, &p, R), (&out, &p, W)]),
    ];
    let ids = [b.id(), d.id(), a.id()];
    drop((a, b, d));
    assert_eq!(temporaries(&window, 4), ids.to_vec());
    // A shorter prefix: `a` and `b` are read by the task after it.
    assert_eq!(temporaries(&window, 3), vec![ids[1]]);
}
