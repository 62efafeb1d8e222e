//! Unwritten stores read as zeros; views alias their store (writes through a view land in
//! place, never in a copy).

use diffuse_ir::{DType, IndexTask, IrError, Privilege, Tuple, View};

use crate::common::{copy_kind, ctx, fill_kind};
use crate::common::{counting_store, view_at};

#[test]
fn unwritten_stores_read_as_zeros() {
    let c = ctx(2);
    let f = c.create_store(&[3, 5], DType::F64).unwrap();
    assert_eq!(c.read::<f64>(&f.view()).unwrap(), vec![0.0; 15]);
    assert_eq!(
        c.read::<f64>(&view_at(&f, &[1, 2], &[2, 2])).unwrap(),
        vec![0.0; 4]
    );
    let f32s = c.create_store(&[4], DType::F32).unwrap();
    assert_eq!(c.read::<f32>(&f32s.view()).unwrap(), vec![0.0f32; 4]);
    let i = c.create_store(&[2, 2], DType::I64).unwrap();
    assert_eq!(c.read::<i64>(&i.view()).unwrap(), vec![0; 4]);
    let i32s = c.create_store(&[3], DType::I32).unwrap();
    assert_eq!(c.read::<i32>(&i32s.view()).unwrap(), vec![0; 3]);
    let b = c.create_store(&[5], DType::Bool).unwrap();
    assert_eq!(c.read::<bool>(&b.view()).unwrap(), vec![false; 5]);
    let e = c.create_store(&[0, 3], DType::F64).unwrap();
    assert_eq!(c.read::<f64>(&e.view()).unwrap(), Vec::<f64>::new());

    // A store a task reads before anyone wrote it is zero as well.
    let src = c.create_store(&[6], DType::F64).unwrap();
    let dst = c.store_from_vec(&[6], vec![9.0; 6]).unwrap();
    let launch = Tuple::shape(&[3]).unwrap();
    c.submit(
        IndexTask::new(&copy_kind(), launch)
            .arg(&dst, dst.view().blocked(launch).unwrap(), Privilege::Write)
            .arg(&src, src.view().blocked(launch).unwrap(), Privilege::Read),
    )
    .unwrap();
    assert_eq!(c.read::<f64>(&dst.view()).unwrap(), vec![0.0; 6]);
}

#[test]
fn writing_a_sub_view_shows_in_place_in_the_whole_store() {
    let c = ctx(3);
    let s = counting_store(&c, &[4, 5]);
    let v = view_at(&s, &[1, 2], &[2, 3]);
    c.write(&v, vec![-1.0, -2.0, -3.0, -4.0, -5.0, -6.0])
        .unwrap();
    let mut want: Vec<f64> = (0..20).map(|x| x as f64).collect();
    for (k, (i, j)) in [(1, 2), (1, 3), (1, 4), (2, 2), (2, 3), (2, 4)]
        .into_iter()
        .enumerate()
    {
        want[i * 5 + j] = -(k as f64) - 1.0;
    }
    assert_eq!(c.read::<f64>(&s.view()).unwrap(), want);
    // Reading the view back gives its row-major contents.
    assert_eq!(
        c.read::<f64>(&v).unwrap(),
        vec![-1.0, -2.0, -3.0, -4.0, -5.0, -6.0]
    );
    // An overlapping view sees the same memory.
    let w = view_at(&s, &[2, 1], &[2, 2]);
    assert_eq!(c.read::<f64>(&w).unwrap(), vec![11.0, -4.0, 16.0, 17.0]);

    // A view of a view: offsets compose.
    let vv = v
        .subview(Tuple::new(&[1, 1]).unwrap(), Tuple::shape(&[1, 2]).unwrap())
        .unwrap();
    assert_eq!(vv.offset().as_slice(), &[2, 3]);
    c.write(&vv, vec![100.0, 200.0]).unwrap();
    want[2 * 5 + 3] = 100.0;
    want[2 * 5 + 4] = 200.0;
    assert_eq!(c.read::<f64>(&s.view()).unwrap(), want);

    // A clone of the handle and a view made before the write see it too (no copies).
    let s2 = s.clone();
    assert_eq!(c.read::<f64>(&s2.view()).unwrap(), want);
    assert_eq!(c.read::<f64>(&w).unwrap(), vec![11.0, -4.0, 16.0, 17.0]);
}

#[test]
fn a_task_writing_a_view_changes_only_that_region() {
    for procs in 1..=4 {
        let c = ctx(procs);
        let s = c.store_from_vec(&[6, 7], vec![1.0; 42]).unwrap();
        let v = view_at(&s, &[1, 2], &[4, 3]);
        let launch = Tuple::shape(&[2, 3]).unwrap();
        c.submit(
            IndexTask::new(&fill_kind(), launch)
                .arg(&s, v.blocked(launch).unwrap(), Privilege::Write)
                .scalar(-7.0),
        )
        .unwrap();
        let got = c.read::<f64>(&s.view()).unwrap();
        for i in 0..6 {
            for j in 0..7 {
                let inside = (1..5).contains(&i) && (2..5).contains(&j);
                let want = if inside { -7.0 } else { 1.0 };
                assert_eq!(got[i * 7 + j], want, "procs {procs} at ({i}, {j})");
            }
        }
        // A 1-D view of a vector, uneven blocks.
        let x = c.store_from_vec(&[11], vec![0.0; 11]).unwrap();
        let xv = view_at(&x, &[3], &[7]);
        let launch = Tuple::shape(&[3]).unwrap();
        c.submit(
            IndexTask::new(&fill_kind(), launch)
                .arg(&x, xv.blocked(launch).unwrap(), Privilege::Write)
                .scalar(2.0),
        )
        .unwrap();
        let want: Vec<f64> = (0..11)
            .map(|k| if (3..10).contains(&k) { 2.0 } else { 0.0 })
            .collect();
        assert_eq!(c.read::<f64>(&x.view()).unwrap(), want, "procs {procs}");
    }
}

#[test]
fn views_out_of_bounds_are_rejected() {
    let c = ctx(1);
    let s = c.create_store(&[4, 4], DType::F64).unwrap();
    for (off, shape) in [
        ([3i64, 0i64], [2i64, 1i64]),
        ([0, 0], [4, 5]),
        ([-1, 0], [1, 1]),
    ] {
        assert!(matches!(
            View::new(&s, Tuple::new(&off).unwrap(), Tuple::shape(&shape).unwrap()),
            Err(IrError::ViewOutOfBounds { .. })
        ));
    }
    let v = view_at(&s, &[1, 1], &[2, 2]);
    assert!(v
        .subview(Tuple::new(&[1, 1]).unwrap(), Tuple::shape(&[2, 1]).unwrap())
        .is_err());
}
