//! `cheapest_cut`: where a full window that is one fusible group gets cut when it cannot
//! grow. The cut goes where the fewest values produced before it must be materialized:
//! needed after it in the window, or still held by the application.

use diffuse_ir::{IndexTask, Privilege, Store};

use crate::common::{blocked, cheapest_cut, ctx, store, task};

use Privilege::{Read as R, Write as W};

/// Two iterations of `t = f(x); u = g(t); out = h(u)`; every `t`, `u` and the first `out`
/// lose their handles, the last `out` is kept (returned) by the caller.
fn two_iterations() -> (Vec<IndexTask>, Store, Store) {
    let c = ctx();
    let launch = [2];
    let x = store(&c, &[8]);
    let px = blocked(&x, &launch);
    let mut window = Vec::new();
    let mut last_out = None;
    for _ in 0..2 {
        let (t, u, out) = (store(&c, &[8]), store(&c, &[8]), store(&c, &[8]));
        let (pt, pu, po) = (
            blocked(&t, &launch),
            blocked(&u, &launch),
            blocked(&out, &launch),
        );
        window.push(task(&launch, &[(&x, &px, R), (&t, &pt, W)]));
        window.push(task(&launch, &[(&t, &pt, R), (&u, &pu, W)]));
        window.push(task(&launch, &[(&u, &pu, R), (&out, &po, W)]));
        last_out = Some(out);
    }
    let out = last_out.expect("two iterations ran");
    (window, x, out)
}

#[test]
fn the_cut_falls_between_iterations() {
    let (window, _x, _out) = two_iterations();
    // Costs by cut: 1 (t1), 1 (u1), 0 (out1 is dead), 1 (t2), 1 (u2), 1 (out2 is held).
    assert_eq!(cheapest_cut(&window, 1), 3);
    assert_eq!(cheapest_cut(&window, 3), 3);
}

#[test]
fn ties_take_the_latest_cut() {
    let (window, _x, _out) = two_iterations();
    // From 4 on every cut costs one store: the latest runs the most.
    assert_eq!(cheapest_cut(&window, 4), 6);
}

#[test]
fn values_the_application_holds_count_against_a_cut() {
    let (window, _x, out) = two_iterations();
    drop(out);
    // Now the last `out` is dead too: cutting after everything costs nothing and wins.
    assert_eq!(cheapest_cut(&window, 1), 6);
}
