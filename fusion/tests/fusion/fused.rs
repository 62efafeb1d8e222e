//! The fused task's signature (§4.2.2): one argument per (store, partition) in order of
//! first use, privileges merged in program order (a read then a write is `ReadWrite`, a
//! write first stays `Write`), temporaries left out.

use diffuse_fusion::FusedTask;
use diffuse_ir::{IndexTask, Partition, Privilege, StoreId};

use crate::common::{analyse, blocked, ctx, group, sh, store, task, view_blocked, R, RW, SUM, W};

const L: [i64; 1] = [4];

fn signature(f: &FusedTask) -> Vec<(StoreId, Partition, Privilege)> {
    f.args()
        .iter()
        .map(|a| (a.store.id(), a.partition.clone(), a.privilege))
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
    let fused = FusedTask::new(tasks.clone(), plan.groups[0].temporaries.clone());
    assert_eq!(
        signature(&fused),
        vec![
            (a.id(), p.clone(), RW),
            (b.id(), p.clone(), R),
            (cc.id(), p.clone(), W),
            (b.id(), q.clone(), R),
        ]
    );
    assert_eq!(fused.temporaries(), &[tid]);
    assert!(fused.is_temporary(tid));
    assert!(!fused.is_temporary(a.id()));
    assert_eq!(fused.launch_domain(), sh(&L));
    assert_eq!(fused.constituents().len(), 4);
    assert_eq!(
        fused.name(),
        "fusion-tests::sig[R,R,W]+fusion-tests::sig[R,R,W]+fusion-tests::sig[W]+fusion-tests::sig[R,R]"
    );

    // Without temporaries, t is an argument like any other: written first, then read.
    let plain = FusedTask::new(tasks, Vec::new());
    assert_eq!(
        signature(&plain),
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
        let fused = FusedTask::new(tasks, Vec::new());
        assert_eq!(
            signature(&fused),
            vec![(s.id(), p.clone(), want)],
            "accesses {accesses:?}"
        );
    }
}

#[test]
fn empty_fused_task_has_no_arguments() {
    let fused = FusedTask::new(Vec::new(), Vec::new());
    assert!(fused.args().is_empty());
    assert!(fused.constituents().is_empty());
    assert_eq!(fused.name(), "");
}
