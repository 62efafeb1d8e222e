//! Split reference counts: application handles (`Store`) and task references (`StoreRef`, held
//! by index tasks) are counted separately; the store's data lives while either kind exists.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use diffuse_ir::{validate, DType, IndexTask, IrError, Partition, Privilege, StoreCore, View};

use crate::common::{ctx, kind, pt, sh};

/// A store's (application handles, task references).
fn counts(s: &StoreCore) -> (usize, usize) {
    (s.app_handles(), s.task_refs())
}

#[test]
fn store_clone_and_drop_change_app_handles_only() {
    let c = ctx();
    let s = c.create_store(&[4], DType::F64).unwrap();
    assert_eq!(counts(&s), (1, 0));
    assert!(s.is_live());

    let s2 = s.clone();
    assert_eq!(counts(&s), (2, 0));
    assert_eq!(s2.id(), s.id());
    let s3 = s2.clone();
    assert_eq!(counts(&s), (3, 0));
    drop(s2);
    assert_eq!(counts(&s), (2, 0));
    drop(s3);
    assert_eq!(counts(&s), (1, 0));

    // A view is held by the application: it keeps a handle while it lives.
    let v = View::new(&s, pt(&[1]), sh(&[2])).unwrap();
    assert_eq!(counts(&s), (2, 0));
    drop(v);
    assert_eq!(counts(&s), (1, 0));

    // Distinct stores never share ids.
    let other = c.create_store(&[4], DType::F64).unwrap();
    assert_ne!(other.id(), s.id());
}

#[test]
fn index_tasks_hold_task_refs_until_dropped() {
    let c = ctx();
    let k = kind(
        "refs",
        &[(DType::F64, Privilege::Read), (DType::F64, Privilege::Read)],
    );
    let s = c.create_store(&[4], DType::F64).unwrap();
    let part = s.view().blocked(sh(&[2])).unwrap();
    assert_eq!(counts(&s), (1, 0));

    let t = IndexTask::new(&k, sh(&[2]))
        .arg(&s, part.clone(), Privilege::Read)
        .arg(&s, Partition::replicate(), Privilege::Read);
    // One task reference per argument; a task does not hold an application handle.
    assert_eq!(counts(&s), (1, 2));

    let t2 = t.clone();
    assert_eq!(counts(&s), (1, 4));
    drop(t);
    assert_eq!(counts(&s), (1, 2));
    drop(t2);
    assert_eq!(counts(&s), (1, 0));

    // StoreRefs are counted the same way.
    let r = s.task_ref();
    let r2 = r.clone();
    assert_eq!(counts(&s), (1, 2));
    assert!(r.same_store(&r2));
    drop((r, r2));
    assert_eq!(counts(&s), (1, 0));
}

/// Sets a flag when dropped, to observe when a store's backend allocation is freed.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn a_store_only_tasks_reference_is_not_live_but_still_referenced() {
    let c = ctx();
    let k = kind("temp", &[(DType::F64, Privilege::Write)]);
    let s = c.create_store(&[6], DType::F64).unwrap();
    let freed = Arc::new(AtomicBool::new(false));
    let flag = freed.clone();
    s.allocation(move || DropFlag(flag)).unwrap();

    let part = s.view().blocked(sh(&[3])).unwrap();
    let t = IndexTask::new(&k, sh(&[3])).arg(&s, part, Privilege::Write);
    let probe = s.task_ref();
    assert_eq!(probe.task_refs(), 2);
    assert!(probe.is_live());

    drop(s);
    assert_eq!(probe.app_handles(), 0);
    assert!(!probe.is_live(), "no application handle is left");
    assert_eq!(
        probe.task_refs(),
        2,
        "the task and the probe still reference it"
    );
    assert!(!t.args()[0].store.is_live());
    assert!(t.args()[0].store.task_refs() > 0);
    assert!(
        !freed.load(Ordering::SeqCst),
        "referenced stores keep their allocation"
    );
    assert!(matches!(
        validate(&t),
        Err(IrError::DeadStore { arg: 0, .. })
    ));

    drop(t);
    assert_eq!(probe.task_refs(), 1);
    assert!(!freed.load(Ordering::SeqCst));
    drop(probe);
    assert!(
        freed.load(Ordering::SeqCst),
        "with no reference of either kind the allocation is freed"
    );
}

#[test]
fn a_second_backend_type_for_the_allocation_is_an_error() {
    let c = ctx();
    let s = c.create_store(&[2], DType::F64).unwrap();
    assert_eq!(*s.allocation(|| 7u32).unwrap(), 7);
    assert_eq!(*s.allocation(|| 9u32).unwrap(), 7, "initialized once");
    assert!(matches!(
        s.allocation(|| 1u64),
        Err(IrError::AllocationType { store, .. }) if store == s.id()
    ));
}
