//! The fused signature of a group (§4.2.2), as the launch template every backend reads
//! builds it: one argument per (store, partition) in order of first use, privileges merged
//! in program order (a read then a write is `ReadWrite`, a write first stays `Write`),
//! temporaries left out.

use std::sync::Arc;

use diffuse_backend::{LaunchPlacement, LaunchPlan, LaunchTemplate};
use diffuse_ir::{IndexTask, Partition, Privilege, StoreId};

use crate::common::{analyse, blocked, ctx, group, store, task, view_blocked, R, RW, SUM, W};

const L: [i64; 1] = [4];

/// The fused signature of `tasks` (a fusible group, at least one task) with `temporaries`:
/// (store, partition, joined privilege) per argument.
pub fn signature(
    tasks: &[IndexTask],
    temporaries: &[StoreId],
) -> Vec<(StoreId, Partition, Privilege)> {
    let template = LaunchTemplate::new(tasks, temporaries, &[], |_, _| {
        Ok::<_, ()>(LaunchPlacement::default_cpus(Vec::new(), 0))
    })
    .expect("the placement cannot fail");
    let plan = LaunchPlan::new(Arc::new(template), tasks.to_vec())
        .unwrap_or_else(|_| panic!("the tasks fit the template made from them"));
    plan.template()
        .fused_args()
        .iter()
        .map(|a| (plan.store(a.slot).id(), a.partition.clone(), a.privilege))
        .collect()
}

#[test]
fn signature_merges_privileges_deduplicates_and_drops_temporaries() {
    let c = ctx();
    let (a, b, cc, t) = (
        store(&c, &[16]),
        store(&c, &[16]),
        store(&c, &[16]),
        store(&c, &[16]),
    );
    let p = blocked(&a, &L);
    let q = view_blocked(&b, &[4], &[12], &L);
    let tasks: Vec<IndexTask> = vec![
        task(&L, &[(&a, &p, R), (&b, &p, R), (&t, &p, W)]),
        // a: read then written through p -> ReadWrite; b read again through p -> one arg.
        task(&L, &[(&t, &p, R), (&b, &p, R), (&a, &p, W)]),
        // cc: written then read through p -> stays Write.
        task(&L, &[(&cc, &p, W)]),
        // b through another partition is another argument.
        task(&L, &[(&cc, &p, R), (&b, &q, R)]),
    ];
    let tid = t.id();
    drop(t);
    let plan = analyse(&tasks);
    assert_eq!(plan.groups, vec![group(0..4, &[tid], None)]);
    assert_eq!(
        signature(&tasks, &plan.groups[0].temporaries),
        vec![
            (a.id(), p.clone(), RW),
            (b.id(), p.clone(), R),
            (cc.id(), p.clone(), W),
            (b.id(), q.clone(), R),
        ]
    );

    // Without temporaries, t is an argument like any other: written first, then read.
    assert_eq!(
        signature(&tasks, &[]),
        vec![
            (a.id(), p.clone(), RW),
            (b.id(), p.clone(), R),
            (tid, p.clone(), W),
            (cc.id(), p.clone(), W),
            (b.id(), q, R),
        ]
    );
}

#[test]
fn privilege_union_in_program_order() {
    let c = ctx();
    let s = store(&c, &[16]);
    let p = blocked(&s, &L);
    let cases = [
        (vec![R, R], R),
        (vec![R, W], RW),
        (vec![R, RW], RW),
        (vec![W, R], W),
        (vec![W, RW], W),
        (vec![W, W], W),
        (vec![RW, R], RW),
        (vec![RW, W], RW),
        (vec![RW, RW], RW),
        (vec![SUM, SUM], SUM),
        (vec![R, R, W, R], RW),
        (vec![W, R, RW, R], W),
    ];
    for (accesses, want) in cases {
        let tasks: Vec<IndexTask> = accesses
            .iter()
            .map(|&privilege| task(&L, &[(&s, &p, privilege)]))
            .collect();
        assert_eq!(
            signature(&tasks, &[]),
            vec![(s.id(), p.clone(), want)],
            "accesses {accesses:?}"
        );
    }
}
