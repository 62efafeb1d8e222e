//! 0-d stores: host writes and reads, tasks reading them through `Replicate`, and tasks
//! writing them over a 0-d launch domain.

use diffuse_ir::{DType, IndexTask, IrError, Partition, Privilege, Tuple};

use crate::common::{ctx, fill_kind, scale_by_store_kind};

#[test]
fn zero_d_store_write_and_read_scalar() {
    let c = ctx(2);
    let s = c.create_store(&[], DType::F64).unwrap();
    assert_eq!(s.shape().dims(), 0);
    assert_eq!(
        c.read_scalar::<f64>(&s.view()).unwrap(),
        0.0,
        "unwritten 0-d"
    );
    c.write(&s.view(), vec![3.5]).unwrap();
    assert_eq!(c.read_scalar::<f64>(&s.view()).unwrap(), 3.5);
    assert_eq!(c.read::<f64>(&s.view()).unwrap(), vec![3.5]);
    c.write(&s.view(), vec![-0.125]).unwrap();
    assert_eq!(c.read_scalar::<f64>(&s.view()).unwrap(), -0.125);

    let t = c.store_from_vec(&[], vec![7i64]).unwrap();
    assert_eq!(c.read_scalar::<i64>(&t.view()).unwrap(), 7);
    // Two 0-d stores are distinct.
    assert_eq!(c.read_scalar::<f64>(&s.view()).unwrap(), -0.125);
    // A 0-d store holds exactly one value.
    assert!(matches!(
        c.write(&s.view(), vec![1.0, 2.0]),
        Err(IrError::HostData { .. })
    ));
    assert!(matches!(
        c.write(&s.view(), Vec::<f64>::new()),
        Err(IrError::HostData { .. })
    ));
    assert_eq!(c.read_scalar::<f64>(&s.view()).unwrap(), -0.125);
}

#[test]
fn read_scalar_of_a_multi_element_view_is_an_error() {
    let c = ctx(1);
    let v = c.store_from_vec(&[3], vec![1.0, 2.0, 3.0]).unwrap();
    assert!(matches!(
        c.read_scalar::<f64>(&v.view()),
        Err(IrError::HostData { .. })
    ));
    // A one-element view of a vector is fine.
    let one = v
        .view()
        .subview(Tuple::new(&[1]).unwrap(), Tuple::shape(&[1]).unwrap())
        .unwrap();
    assert_eq!(c.read_scalar::<f64>(&one).unwrap(), 2.0);
}

#[test]
fn task_scales_a_vector_by_a_0d_store() {
    let n = 10i64;
    let x: Vec<f64> = (0..n).map(|k| k as f64 - 3.5).collect();
    for procs in 1..=4 {
        for points in 1..=3 {
            let c = ctx(procs);
            let s = c.store_from_vec(&[], vec![-2.5]).unwrap();
            let xs = c.store_from_vec(&[n], x.clone()).unwrap();
            let out = c.create_store(&[n], DType::F64).unwrap();
            let launch = Tuple::shape(&[points]).unwrap();
            let scale = || {
                c.submit(
                    IndexTask::new(&scale_by_store_kind(), launch)
                        .arg(&out, out.view().blocked(launch).unwrap(), Privilege::Write)
                        .arg(&xs, xs.view().blocked(launch).unwrap(), Privilege::Read)
                        .arg(&s, Partition::replicate(), Privilege::Read),
                )
                .unwrap()
            };
            scale();
            let want: Vec<f64> = x.iter().map(|v| -2.5 * v).collect();
            assert_eq!(c.read::<f64>(&out.view()).unwrap(), want, "procs {procs}");
            // The 0-d input is untouched.
            assert_eq!(c.read_scalar::<f64>(&s.view()).unwrap(), -2.5);
            // Changing the 0-d store changes the next task's result.
            c.write(&s.view(), vec![4.0]).unwrap();
            scale();
            let want: Vec<f64> = x.iter().map(|v| 4.0 * v).collect();
            assert_eq!(c.read::<f64>(&out.view()).unwrap(), want, "procs {procs}");
        }
    }
}

#[test]
fn task_writes_a_0d_store_over_a_0d_launch() {
    let c = ctx(3);
    let s = c.create_store(&[], DType::F64).unwrap();
    c.submit(
        IndexTask::new(&fill_kind(), Tuple::scalar())
            .arg(&s, Partition::replicate(), Privilege::Write)
            .scalar(6.25),
    )
    .unwrap();
    assert_eq!(c.read_scalar::<f64>(&s.view()).unwrap(), 6.25);
    // A single-point 1-D launch works too.
    c.submit(
        IndexTask::new(&fill_kind(), Tuple::shape(&[1]).unwrap())
            .arg(&s, Partition::replicate(), Privilege::Write)
            .scalar(-1.0),
    )
    .unwrap();
    assert_eq!(c.read_scalar::<f64>(&s.view()).unwrap(), -1.0);
    // Writing it from several points is rejected, and leaves the value alone.
    let err = c
        .submit(
            IndexTask::new(&fill_kind(), Tuple::shape(&[2]).unwrap())
                .arg(&s, Partition::replicate(), Privilege::Write)
                .scalar(9.0),
        )
        .unwrap_err();
    assert!(matches!(err, IrError::ReplicatedWrite { .. }), "{err}");
    assert_eq!(c.read_scalar::<f64>(&s.view()).unwrap(), -1.0);
}
