//! Bad arguments give typed errors naming the primitive, the dimension and the shape; nothing
//! panics.

use diffuse_mapper::machine::{MSpace, Machine, MachineError, Primitive, ProcKind};

fn gpus(nodes: usize, per_node: usize) -> MSpace {
    Machine::uniform(nodes, per_node)
        .space(ProcKind::Gpu)
        .expect("a non-empty machine")
}

#[test]
fn bad_dims_for_every_primitive() {
    let m = gpus(2, 4);
    let shape = vec![2, 4];
    for dim in [-1, 2, 3, i64::MIN, i64::MAX] {
        let errs = [
            (m.split(dim, 1), Primitive::Split),
            (m.merge(dim, 0), Primitive::Merge),
            (m.merge(0, dim), Primitive::Merge),
            (m.swap(dim, 0), Primitive::Swap),
            (m.swap(1, dim), Primitive::Swap),
            (m.slice(dim, 0, 0), Primitive::Slice),
            (m.reverse(dim), Primitive::Reverse),
            (m.balance_split(dim, 2), Primitive::BalanceSplit),
            (m.auto_split(dim, &[2, 2]), Primitive::AutoSplit),
            (m.split_into(dim, &[2]), Primitive::SplitInto),
        ];
        for (r, op) in errs {
            let e = r.unwrap_err();
            assert!(
                matches!(&e, MachineError::BadDim { op: o, dim: d, shape: s } if *o == op && *d == dim && *s == shape),
                "{e:?}"
            );
            let msg = e.to_string();
            assert!(msg.starts_with(op.name()), "{msg}");
            assert!(msg.contains(&dim.to_string()), "{msg}");
            assert!(msg.contains("(2, 4)"), "{msg}");
            assert_eq!(e.primitive(), Some(op));
        }
    }
}

#[test]
fn split_factors_must_divide() {
    let m = gpus(2, 6);
    for f in [0, -1, -6, 4, 5, 7, 12, i64::MAX, i64::MIN] {
        let e = m.split(1, f).unwrap_err();
        assert!(
            matches!(e, MachineError::BadFactor { op: Primitive::Split, dim: 1, factor, .. } if factor == f),
            "{e:?}"
        );
        assert!(e.to_string().contains("split: factor"), "{e}");
    }
    for bad in [
        &[][..],
        &[2, 2],
        &[0, 6],
        &[-2, -3],
        &[7],
        &[i64::MAX, i64::MAX, 2],
    ] {
        let e = m.split_into(1, bad).unwrap_err();
        assert!(matches!(e, MachineError::BadFactors { .. }), "{e:?}");
    }
    let e = m.split_into(1, &[0]).unwrap_err();
    assert_eq!(
        e.clone().with_primitive(Primitive::Decompose).primitive(),
        Some(Primitive::Decompose)
    );
    assert!(e
        .with_primitive(Primitive::Decompose)
        .to_string()
        .starts_with("decompose:"));
}

#[test]
fn merge_needs_distinct_dims_and_two_of_them() {
    let m = gpus(2, 2);
    let e = m.merge(1, 1).unwrap_err();
    assert!(
        matches!(
            e,
            MachineError::SameDim {
                op: Primitive::Merge,
                dim: 1,
                ..
            }
        ),
        "{e:?}"
    );
    let one = m.merge(0, 1).unwrap();
    assert!(matches!(one.merge(0, 0), Err(MachineError::SameDim { .. })));
    assert!(matches!(one.merge(0, 1), Err(MachineError::BadDim { .. })));
}

#[test]
fn slice_ranges() {
    let m = gpus(3, 4);
    for (lo, hi) in [
        (-1, 2),
        (2, 1),
        (0, 4),
        (4, 4),
        (i64::MIN, i64::MAX),
        (i64::MAX, i64::MAX),
    ] {
        let e = m.slice(1, lo, hi).unwrap_err();
        assert!(
            matches!(e, MachineError::SliceOutOfRange { op: Primitive::Slice, dim: 1, lo: l, hi: h, .. } if l == lo && h == hi),
            "{e:?}"
        );
        assert!(e.to_string().contains("(3, 4)"));
    }
    assert_eq!(m.slice(1, 3, 3).unwrap().size(), &[3, 1]);
    assert_eq!(m.slice(0, 0, 2).unwrap().size(), &[3, 4]);
}

#[test]
fn balance_and_auto_split_arguments() {
    let m = gpus(4, 6);
    for parts in [0, -1, i64::MIN] {
        let e = m.balance_split(1, parts).unwrap_err();
        assert!(
            matches!(e, MachineError::BadParts { parts: p, .. } if p == parts),
            "{e:?}"
        );
    }
    let e = m.balance_split(1, i64::MAX).unwrap_err();
    assert!(matches!(e, MachineError::SearchTooLarge { .. }), "{e:?}");
    for task in [&[][..], &[0], &[4, -2], &[i64::MIN]] {
        let e = m.auto_split(0, task).unwrap_err();
        assert!(
            matches!(
                e,
                MachineError::BadTaskShape {
                    op: Primitive::AutoSplit,
                    dim: 0,
                    ..
                }
            ),
            "{e:?}"
        );
    }
    let many = vec![1i64; 1000];
    assert!(matches!(
        m.auto_split(0, &many),
        Err(MachineError::SearchTooLarge { .. })
    ));
    // Huge (pairwise coprime) task extents: the objective's common denominator overflows.
    let huge = [i64::MAX, i64::MAX - 1, i64::MAX - 2];
    assert!(matches!(
        m.auto_split(1, &huge),
        Err(MachineError::Overflow {
            op: Primitive::AutoSplit,
            ..
        })
    ));
    // A big prime-sized dimension is still searched (or refused) without panicking.
    let big = MSpace::new(ProcKind::Cpu, 1, 1_000_003).unwrap();
    let b = big.balance_split(1, 2).unwrap();
    assert_eq!(b.size(), &[1, 1_000_003, 1]);
    // The largest searches allowed finish (2^3 * 3 * 5 into 16 parts: 208,896 candidates).
    let wide = MSpace::new(ProcKind::Cpu, 120, 1).unwrap();
    let w = wide.balance_split(0, 16).unwrap();
    let mut want = vec![5, 3, 2, 2, 2];
    want.resize(16, 1);
    assert_eq!(&w.size()[..16], &want[..]);
    assert!(matches!(
        wide.balance_split(0, 17),
        Err(MachineError::SearchTooLarge { parts: 17, .. })
    ));
    // A huge dimension with small prime factors is still searched exactly.
    let huge_dim = MSpace::new(ProcKind::Cpu, 1, 1 << 50).unwrap();
    assert_eq!(
        huge_dim.balance_split(1, 2).unwrap().size(),
        &[1, 1 << 25, 1 << 25]
    );
}

#[test]
fn bad_points() {
    let m = gpus(2, 4).split(1, 2).unwrap();
    for p in [&[][..], &[0], &[0, 0], &[0, 0, 0, 0]] {
        assert!(matches!(
            m.to_processor(p),
            Err(MachineError::PointRank { .. })
        ));
    }
    for p in [
        [-1, 0, 0],
        [2, 0, 0],
        [0, 2, 0],
        [0, 0, 2],
        [i64::MIN, 0, 0],
        [0, 0, i64::MAX],
    ] {
        let e = m.to_processor(&p).unwrap_err();
        assert!(matches!(e, MachineError::PointOutOfBounds { .. }), "{e:?}");
        assert!(e.to_string().contains("(2, 2, 2)"), "{e}");
    }
}

#[test]
fn empty_and_huge_machines() {
    for (n, p) in [(0, 4), (2, 0), (0, 0)] {
        let e = Machine::uniform(n, p).space(ProcKind::Gpu).unwrap_err();
        assert!(matches!(e, MachineError::NoProcessors { .. }), "{e:?}");
    }
    assert!(matches!(
        Machine::new(2).space(ProcKind::Py),
        Err(MachineError::NoProcessors {
            kind: ProcKind::Py,
            ..
        })
    ));
    for (n, p) in [(usize::MAX, 1), (1 << 32, 1 << 32), (2, usize::MAX / 2)] {
        assert!(matches!(
            MSpace::new(ProcKind::Cpu, n, p),
            Err(MachineError::TooLarge { .. })
        ));
    }
    // The largest space that fits still maps its corners.
    let m = MSpace::new(ProcKind::Cpu, 1, i64::MAX as usize).unwrap();
    let last = m.merge(1, 0).unwrap();
    assert_eq!(last.size(), &[i64::MAX]);
    assert_eq!(
        last.to_processor(&[i64::MAX - 1]).unwrap().index,
        i64::MAX as usize - 1
    );
    let r = last.reverse(0).unwrap();
    assert_eq!(r.to_processor(&[0]).unwrap().index, i64::MAX as usize - 1);
}

#[test]
fn bad_names_and_specs() {
    for s in ["gpu", "TPU", "", "G PU"] {
        assert_eq!(
            s.parse::<ProcKind>(),
            Err(diffuse_mapper::machine::UnknownProcKind(s.to_string()))
        );
    }
    for s in [
        "",
        "2",
        "x4",
        "2x",
        "0x4",
        "2x0",
        "-1x2",
        "2x4x1",
        "axb",
        "99999999999999999999x1",
    ] {
        let e = s.parse::<Machine>().unwrap_err();
        assert!(matches!(e, MachineError::BadMachineSpec(_)), "{s}: {e:?}");
    }
    assert_eq!(" 3X2 ".parse::<Machine>().unwrap(), Machine::uniform(3, 2));
}

#[test]
fn point_of_other_kinds_and_outside() {
    let m = gpus(2, 2);
    let cpu = Machine::uniform(2, 2).space(ProcKind::Cpu).unwrap();
    let p = cpu.to_processor(&[1, 1]).unwrap();
    assert_eq!(m.point_of(&p), None);
    let mut q = m.to_processor(&[1, 1]).unwrap();
    assert_eq!(m.point_of(&q), Some(vec![1, 1]));
    q.node = 5;
    assert_eq!(m.point_of(&q), None);
}
