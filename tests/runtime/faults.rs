//! Faults: kernel errors and panics become `IrError::Kernel` naming the kind and the point,
//! host transfers of the wrong type or length are `IrError::HostData`, and the backend keeps
//! working afterwards.

use std::sync::Arc;

use diffuse::{Backend, EmbeddedBackend, EmbeddedConfig};
use diffuse_ir::{
    Context, DType, HostData, IndexTask, IrError, KernelError, Privilege, Rect, Store, TaskKind,
    Tuple,
};

use crate::common::embedded_backend;
use crate::common::faults::{fail_at_kind, launch_1d, panic_at_kind};
use crate::common::{ctx, kind_once, name};

/// Asks for its f64 argument as f32: the kernel API refuses.
fn wrong_type_kind() -> Arc<TaskKind> {
    kind_once(
        "wrong_type",
        |b| b.arg("x", DType::F64, Privilege::Read),
        |t| t.read::<f32>(0).map(|_| ()),
    )
}

/// The kernel failure `err` reports (failing the test unless it is one).
fn kernel_error(err: &IrError) -> &KernelError {
    match err {
        IrError::Kernel(k) => k,
        other => panic!("expected IrError::Kernel, got {other:?}"),
    }
}

/// Launches the faulty kind `short` over `n` points on a fresh store of `n` elements, failing
/// at point `at` only: the launch fails with a kernel error naming the kind and the point.
/// Returns the store and the error.
fn fail_one_point(
    c: &Context,
    kind: &Arc<TaskKind>,
    short: &str,
    n: i64,
    at: i64,
) -> (Store, IrError) {
    let out = c.create_store(&[n], DType::F64).unwrap();
    let err = launch_1d(c, kind, &out, n, 1 << at).unwrap_err();
    let k = kernel_error(&err);
    assert_eq!(k.kind, name(short));
    assert_eq!(k.point.as_slice(), &[at]);
    (out, err)
}

#[test]
fn kernel_error_surfaces_with_kind_and_point() {
    for procs in 1..=4 {
        let c = ctx(procs);
        let (out, err) = fail_one_point(&c, &fail_at_kind(), "fail_at", 8, 5);
        let k = kernel_error(&err);
        assert!(k.reason.contains("injected failure 5"), "{}", k.reason);
        let msg = err.to_string();
        assert!(
            msg.contains(&name("fail_at")) && msg.contains("(5,)"),
            "{msg}"
        );

        // Several failing points: the first in point order is reported, whatever the timing.
        let err =
            launch_1d(&c, &fail_at_kind(), &out, 8, (1 << 6) | (1 << 2) | (1 << 7)).unwrap_err();
        assert_eq!(kernel_error(&err).point.as_slice(), &[2], "procs {procs}");

        // The backend still works: a clean launch succeeds and its results are visible.
        launch_1d(&c, &fail_at_kind(), &out, 4, 0).unwrap();
        assert_eq!(
            c.read::<f64>(&out.view()).unwrap(),
            vec![1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0]
        );
    }
}

#[test]
fn kernel_panic_surfaces_as_kernel_error() {
    for procs in 1..=4 {
        let c = ctx(procs);
        let (out, err) = fail_one_point(&c, &panic_at_kind(), "panic_at", 6, 4);
        let reason = &kernel_error(&err).reason;
        assert!(reason.contains("panicked"), "{reason}");
        // Every point panicking at once is still just an error.
        let err = launch_1d(&c, &panic_at_kind(), &out, 6, 0b111111).unwrap_err();
        assert!(
            matches!(&err, IrError::Kernel(k) if k.point.as_slice() == [0]),
            "{err:?}"
        );
        // No poisoned state: the next task and host copies work.
        launch_1d(&c, &panic_at_kind(), &out, 3, 0).unwrap();
        assert_eq!(
            c.read::<f64>(&out.view()).unwrap(),
            vec![1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
        );
        c.write(&out.view(), vec![0.0; 6]).unwrap();
        assert_eq!(c.read::<f64>(&out.view()).unwrap(), vec![0.0; 6]);
    }
}

/// The reason of a panicking kernel carries the panic message. The payload must reach
/// `panic_message` as `&*panic`: `&panic` (a `&Box<dyn Any + Send>`) unsizes to a `&dyn Any`
/// whose concrete type is the `Box` itself, neither `downcast_ref::<&str>` nor
/// `downcast_ref::<String>` matches, and every panic would read "non-string panic payload".
#[test]
fn kernel_panic_reason_carries_the_panic_message() {
    let (_, err) = fail_one_point(&ctx(2), &panic_at_kind(), "panic_at", 6, 4);
    let reason = &kernel_error(&err).reason;
    assert!(reason.contains("injected panic 4"), "{reason}");
}

#[test]
fn kernel_asking_for_the_wrong_element_type_fails() {
    let c = ctx(2);
    let x = c.store_from_vec(&[4], vec![1.0f64; 4]).unwrap();
    let launch = Tuple::shape(&[2]).unwrap();
    let err = c
        .submit(IndexTask::new(&wrong_type_kind(), launch).arg(
            &x,
            x.view().blocked(launch).unwrap(),
            Privilege::Read,
        ))
        .and_then(|()| c.flush_window())
        .unwrap_err();
    let k = kernel_error(&err);
    assert_eq!(k.kind, name("wrong_type"));
    assert_eq!(k.point.as_slice(), &[0]);
}

#[test]
fn reading_with_the_wrong_element_type_is_host_data_error() {
    let c = ctx(2);
    let x = c
        .store_from_vec(&[2, 2], vec![1.0f64, 2.0, 3.0, 4.0])
        .unwrap();
    assert!(matches!(
        c.read::<i64>(&x.view()),
        Err(IrError::HostData { .. })
    ));
    assert!(matches!(
        c.read::<f32>(&x.view()),
        Err(IrError::HostData { .. })
    ));
    assert!(matches!(
        c.read::<bool>(&x.view()),
        Err(IrError::HostData { .. })
    ));
    let s = c.store_from_vec(&[], vec![1.5f64]).unwrap();
    assert!(matches!(
        c.read_scalar::<i32>(&s.view()),
        Err(IrError::HostData { .. })
    ));
    let i = c.store_from_vec(&[3], vec![1i32, 2, 3]).unwrap();
    assert!(matches!(
        c.read::<f64>(&i.view()),
        Err(IrError::HostData { .. })
    ));
    assert_eq!(c.read::<i32>(&i.view()).unwrap(), vec![1, 2, 3]);
    // Writing the wrong type is refused too, and changes nothing.
    assert!(matches!(
        c.write(&x.view(), vec![1i64, 2, 3, 4]),
        Err(IrError::HostData { .. })
    ));
    assert_eq!(c.read::<f64>(&x.view()).unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
}

#[test]
fn writing_a_vec_of_the_wrong_length_is_an_error() {
    let c = ctx(2);
    let x = c.store_from_vec(&[3, 4], vec![5.0f64; 12]).unwrap();
    for len in [0, 11, 13, 24] {
        let err = c.write(&x.view(), vec![1.0f64; len]).unwrap_err();
        assert!(matches!(err, IrError::HostData { .. }), "{err}");
    }
    let sub = x
        .view()
        .subview(Tuple::new(&[1, 1]).unwrap(), Tuple::shape(&[2, 2]).unwrap())
        .unwrap();
    for len in [3, 5, 12] {
        assert!(matches!(
            c.write(&sub, vec![1.0f64; len]),
            Err(IrError::HostData { .. })
        ));
    }
    assert!(c.store_from_vec(&[2, 2], vec![1.0f64; 3]).is_err());
    assert_eq!(
        c.read::<f64>(&x.view()).unwrap(),
        vec![5.0; 12],
        "unchanged"
    );
}

#[test]
fn executor_rejects_bad_boxes_lengths_and_types() {
    let backend = embedded_backend(2);
    let c = crate::common::unfused(backend.clone());
    assert_eq!(c.executor_name(), "embedded");
    let x = c.store_from_vec(&[4], vec![1.0f64, 2.0, 3.0, 4.0]).unwrap();
    let r = x.task_ref();
    let rect = |lo: &[i64], hi: &[i64]| Rect {
        lo: Tuple::new(lo).unwrap(),
        hi: Tuple::new(hi).unwrap(),
    };
    // Boxes outside the store, of the wrong rank, or inverted.
    for bad in [rect(&[2], &[5]), rect(&[0, 0], &[1, 1]), rect(&[3], &[1])] {
        assert!(
            matches!(backend.read(&r, bad), Err(IrError::HostData { .. })),
            "read {bad}"
        );
        assert!(
            matches!(
                // As many values as the box has points: only the bounds are wrong.
                backend.write(&r, bad, HostData::F64(vec![0.0; bad.volume() as usize])),
                Err(IrError::HostData { .. })
            ),
            "write {bad}"
        );
    }
    // Wrong length and wrong type for a valid box.
    let ok = rect(&[1], &[3]);
    assert!(matches!(
        backend.write(&r, ok, HostData::F64(vec![0.0; 3])),
        Err(IrError::HostData { .. })
    ));
    assert!(matches!(
        backend.write(&r, ok, HostData::I64(vec![0; 2])),
        Err(IrError::HostData { .. })
    ));
    assert_eq!(backend.read(&r, ok).unwrap(), HostData::F64(vec![2.0, 3.0]));
    // A valid write through the executor lands where it should.
    backend
        .write(&r, ok, HostData::F64(vec![-2.0, -3.0]))
        .unwrap();
    assert_eq!(
        c.read::<f64>(&x.view()).unwrap(),
        vec![1.0, -2.0, -3.0, 4.0]
    );
    // An empty box reads nothing.
    assert_eq!(
        backend.read(&r, rect(&[2], &[2])).unwrap(),
        HostData::F64(vec![])
    );
    backend.flush().unwrap();
    c.flush_window().unwrap();
}

#[test]
fn zero_processors_is_a_backend_error() {
    assert!(matches!(
        EmbeddedBackend::new(EmbeddedConfig {
            procs: Some(0),
            ..Default::default()
        }),
        Err(IrError::Backend { .. })
    ));
    let b = EmbeddedBackend::new(EmbeddedConfig {
        procs: None,
        ..Default::default()
    })
    .unwrap();
    assert!(b.machine().cpus() >= 1);
    assert_eq!(
        EmbeddedBackend::new(EmbeddedConfig {
            procs: Some(3),
            ..Default::default()
        })
        .unwrap()
        .machine()
        .cpus(),
        3
    );
}
