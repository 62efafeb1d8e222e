//! Kernel faults inside a fused task surface at the flush, naming the constituent and the
//! point, and the context keeps working afterwards.

use crate::common::fusion::*;
use crate::common::submit_blocked;
use diffuse_ir::{Context, IndexTask, IrError, Privilege, Store, Tuple};

// ---------------------------------------------------------------------------------------------
// Faults inside a fused task.
// ---------------------------------------------------------------------------------------------

/// `t = x + x` (fresh), `u = fail_at(t)` (fresh), `v = u * u` (kept), all on 4 points and
/// buffered in one window; `t` and `u` dropped. Returns the flush's result and `v`'s handle.
fn faulty_chain(c: &Context, x: &Store, mask: i64, panics: bool) -> (Result<(), IrError>, Store) {
    let n = x.shape()[0];
    let launch = Tuple::shape(&[4]).unwrap();
    let part = |s: &Store| s.view().blocked(launch).unwrap();
    let (t, u, v) = (whole(c, &[n]), whole(c, &[n]), whole(c, &[n]));
    c.submit(
        IndexTask::new(&ew_add_kind(), launch)
            .arg(&t, part(&t), Privilege::Write)
            .arg(x, part(x), Privilege::Read)
            .arg(x, part(x), Privilege::Read),
    )
    .unwrap();
    c.submit(
        IndexTask::new(&fail_at_kind(), launch)
            .arg(&u, part(&u), Privilege::Write)
            .arg(&t, part(&t), Privilege::Read)
            .scalar(mask)
            .scalar(panics),
    )
    .unwrap();
    submit_blocked(c, &ew_mul_kind(), launch, &v, &u, &u).unwrap();
    drop((t, u));
    (c.flush_window(), v)
}

#[test]
fn faults_inside_a_fused_task_surface_at_flush_and_the_context_survives() {
    let n = 16usize;
    let data = random_data(n, 5);
    let want: Vec<f64> = data.iter().map(|x| (x + x) * (x + x)).collect();
    let fused_name = format!(
        "{}+{}+{} (temporaries: 2)",
        ew_add_kind().name(),
        fail_at_kind().name(),
        ew_mul_kind().name()
    );
    for strip_bytes in [None, Some(8)] {
        for panics in [false, true] {
            let what = format!("strip_bytes {strip_bytes:?}, panics {panics}");
            let r = recording_rig(2, fused(Some(8)), strip_bytes, None);
            let c = &r.ctx;
            let x = c.store_from_vec(&[n as i64], data.clone()).unwrap();
            let (result, lost) = faulty_chain(c, &x, 1 << 2, panics);
            let err = result.expect_err(&what);
            let IrError::Kernel(k) = &err else {
                panic!("{what}: expected IrError::Kernel, got {err:?}");
            };
            assert_eq!(k.kind, fail_at_kind().name(), "{what}");
            assert_eq!(k.point.as_slice(), &[2], "{what}");
            let reason = if panics {
                "injected fused panic 2"
            } else {
                "injected fused failure 2"
            };
            assert!(k.reason.contains(reason), "{what}: {}", k.reason);
            let executed: Vec<String> = r.take_executed();
            // The fused task failed; its constituents ran again one by one to find the one
            // that fails (`mul` reads its lost result, so it does not run).
            assert_eq!(
                executed,
                vec![
                    fused_name.clone(),
                    ew_add_kind().name().to_string(),
                    fail_at_kind().name().to_string()
                ],
                "{what}: not fused, or not recovered"
            );
            // `v` depends on the failure: reading it reports the failure.
            let poisoned = c.read::<f64>(&lost.view()).expect_err(&what);
            let IrError::Poisoned { store, task, .. } = &poisoned else {
                panic!("{what}: expected IrError::Poisoned, got {poisoned:?}");
            };
            assert_eq!(
                (*store, task.as_str()),
                (lost.id(), fail_at_kind().name()),
                "{what}"
            );
            assert!(
                matches!(poisoned.root_cause(), IrError::Kernel(k) if k.point.as_slice() == [2])
            );
            assert!(poisoned.to_string().contains(reason), "{what}: {poisoned}");

            // The context still works: the same chain without the fault, and host copies.
            let (result, v) = faulty_chain(c, &x, 0, panics);
            result.unwrap_or_else(|e| panic!("{what}: clean chain failed: {e}"));
            assert_holds(c, &v, &want, &what);
            c.write(&x.view(), vec![1.0; n]).unwrap();
            assert_eq!(c.read::<f64>(&x.view()).unwrap(), vec![1.0; n], "{what}");
            assert_eq!(
                r.backend.stats().strip_points > 0,
                strip_bytes.is_some(),
                "{what}: strips"
            );
        }
    }
}

/// Scalar work fused into a larger launch runs over its own launch again when the fused task
/// fails and its constituents run one by one: `s = 2 a + b` (0-d, one point), `t = s * x`
/// (4 points), `u = fail_at(t)`; `s` and `t` dropped, so `s` ran at every point.
#[test]
fn scalar_work_of_a_failed_fused_task_runs_again_on_its_own_launch() {
    let r = recording_rig(2, fused(Some(8)), None, None);
    let c = &r.ctx;
    let n = 16i64;
    let launch = Tuple::shape(&[4]).unwrap();
    let x = random_vector(c, n, 3);
    let (a, b) = (
        c.store_from_vec(&[], vec![1.5]).unwrap(),
        c.store_from_vec(&[], vec![0.25]).unwrap(),
    );
    let part = |s: &Store| s.view().blocked(launch).unwrap();
    let (s, t) = submit_scaled_by_scalar_work(c, &x, &a, &b, launch);
    let u = whole(c, &[n]);
    c.submit(
        IndexTask::new(&fail_at_kind(), launch)
            .arg(&u, part(&u), Privilege::Write)
            .arg(&t, part(&t), Privilege::Read)
            .scalar(1i64 << 2)
            .scalar(false),
    )
    .unwrap();
    drop((s, t));
    let err = c
        .flush_window()
        .expect_err("the fused task fails at point 2");
    assert!(
        matches!(&err, IrError::Kernel(k) if k.point.as_slice() == [2]),
        "{err:?}"
    );
    let executed = r.take_executed();
    assert_eq!(
        executed,
        vec![
            format!(
                "{}+{}+{} (temporaries: 2)",
                ew_scalar_axpy_kind().name(),
                ew_scale_by_store_kind().name(),
                fail_at_kind().name()
            ),
            ew_scalar_axpy_kind().name().to_string(),
            ew_scale_by_store_kind().name().to_string(),
            fail_at_kind().name().to_string(),
        ],
        "scalar work not fused, or not run again one by one"
    );
    assert!(
        c.read::<f64>(&u.view()).is_err(),
        "u depends on the failure"
    );
    // The context keeps working: x and the 0-d inputs are intact.
    assert_eq!(c.read::<f64>(&a.view()).unwrap(), vec![1.5]);
    assert_eq!(
        c.read::<f64>(&x.view()).unwrap(),
        random_data(n as usize, 3)
    );
}
