//! The sources' examples and the guarantees the manual lists for each primitive (with merge in
//! the paper's Figure 6 order).

use super::{at, ni, points};
use diffuse_mapper::machine::{MSpace, Machine, ProcKind, Processor};

fn gpus(nodes: usize, per_node: usize) -> MSpace {
    Machine::uniform(nodes, per_node)
        .space(ProcKind::Gpu)
        .expect("a non-empty machine")
}

/// The block mapping of the paper's Figure 3 (and the sources' `block2d`):
/// `idx = point * m.size / space`, then `m[*idx]`.
fn block(m: &MSpace, point: &[i64], space: &[i64]) -> Processor {
    let idx: Vec<i64> = point
        .iter()
        .zip(m.size())
        .zip(space)
        .map(|((&p, &s), &l)| p * s / l)
        .collect();
    at(m, &idx)
}

#[test]
fn figure3_block_mapping_puts_2_3_on_node0_gpu1() {
    let m = gpus(2, 2);
    assert_eq!(m.size(), &[2, 2]);
    let p = block(&m, &[2, 3], &[6, 6]);
    assert_eq!(
        p,
        Processor {
            kind: ProcKind::Gpu,
            node: 0,
            index: 1
        }
    );
    // The whole grid: every GPU gets one 3x3 block.
    for pt in points(&[6, 6]) {
        let p = block(&m, &pt, &[6, 6]);
        assert_eq!(
            (p.node, p.index),
            ((pt[0] / 3) as usize, (pt[1] / 3) as usize)
        );
    }
}

#[test]
fn manual_circuit_linearblock_on_2x4() {
    // linearblock: mgpu[ip / mgpu.size[1], ip % mgpu.size[1]]; logged `0 <- (0) (1) (2) (3)`,
    // `1 <- (4) (5) (6) (7)`.
    let m = gpus(2, 4);
    let s1 = m.size()[1];
    let placed: Vec<(usize, usize)> = (0..8).map(|i| ni(&m, &[i / s1, i % s1])).collect();
    let nodes: Vec<usize> = placed.iter().map(|p| p.0).collect();
    assert_eq!(nodes, [0, 0, 0, 0, 1, 1, 1, 1]);
    let procs: Vec<usize> = placed.iter().map(|p| p.1).collect();
    assert_eq!(procs, [0, 1, 2, 3, 0, 1, 2, 3]);
}

#[test]
fn manual_hierarchical_and_cyclic_1d() {
    let m = gpus(2, 4);
    let (s0, s1) = (m.size()[0], m.size()[1]);
    let is = 16;
    for ip in 0..is {
        // hierarchicalblock1d
        let node_idx = ip * s0 / is;
        let blk = is / s0;
        let gpu_idx = (ip % blk) * s1 / blk;
        assert_eq!(
            ni(&m, &[node_idx, gpu_idx]),
            ((ip / 8) as usize, ((ip % 8) / 2) as usize)
        );
        // cyclic1d
        assert_eq!(
            ni(&m, &[ip % s0, ip / s0 % s1]),
            ((ip % 2) as usize, ((ip / 2) % 4) as usize)
        );
    }
}

#[test]
fn paper_block1d_x_inverts_split_then_merge() {
    // §5.2: m.merge(0, 1).split(0, n * g) has shape (n*g, 1), and its point (a, 0) is
    // (a mod n, a / n) of the original (node, gpu) space.
    for (n, g) in [(2i64, 2i64), (2, 4), (3, 2), (4, 3)] {
        let m = gpus(n as usize, g as usize);
        let m1 = m.merge(0, 1).and_then(|x| x.split(0, n * g)).unwrap();
        assert_eq!(m1.size(), &[n * g, 1]);
        for a in 0..n * g {
            assert_eq!(ni(&m1, &[a, 0]), ((a % n) as usize, (a / n) as usize));
        }
    }
}

#[test]
fn paper_figure4_merge_gives_1d_space_of_4() {
    let m = gpus(2, 2).merge(0, 1).unwrap();
    assert_eq!(m.size(), &[4]);
    assert_eq!(m.ndim(), 1);
    let got: Vec<(usize, usize)> = (0..4).map(|i| ni(&m, &[i])).collect();
    // Figure 6: dimension 0 (nodes) varies fastest.
    assert_eq!(got, [(0, 0), (1, 0), (0, 1), (1, 1)]);
}

#[test]
fn paper_figure5_four_splits_give_6d_space() {
    // 2 nodes x 4 GPUs; nodes as (2,1,1), GPUs as (1,2,2).
    let m = gpus(2, 4);
    let m6 = m
        .split(0, 2)
        .and_then(|x| x.split(1, 1))
        .and_then(|x| x.split(3, 1))
        .and_then(|x| x.split(4, 2))
        .unwrap();
    assert_eq!(m6.size(), &[2, 1, 1, 1, 2, 2]);
    for p in points(m6.size()) {
        let (node, gpu) = ni(&m6, &p);
        assert_eq!(node as i64, p[0]);
        assert_eq!(gpu as i64, p[4] + 2 * p[5]);
    }
}

#[test]
fn paper_merge_is_inverse_of_split_derivation() {
    // m'' = m.split(0, d).merge(0, 1) is m again (§3.3).
    let m = gpus(4, 3);
    for d in [1, 2, 4] {
        let m2 = m.split(0, d).and_then(|x| x.merge(0, 1)).unwrap();
        assert_eq!(m2.size(), m.size());
        for p in points(m.size()) {
            assert_eq!(at(&m2, &p), at(&m, &p));
        }
    }
}

/// A 4-d space to exercise the primitives on more than two dimensions: (2, 3, 2, 2).
fn four_d() -> MSpace {
    gpus(6, 4).split(0, 2).and_then(|x| x.split(2, 2)).unwrap()
}

#[test]
fn merge_guarantees_in_figure6_order() {
    let old = four_d();
    assert_eq!(old.size(), &[2, 3, 2, 2]);
    for d1 in 0..4i64 {
        for d2 in 0..4i64 {
            if d1 == d2 {
                continue;
            }
            let new = old.merge(d1, d2).unwrap();
            let merge_dim = if d1 < d2 { d1 } else { d1 - 1 } as usize;
            let (s1, s2) = (old.size()[d1 as usize], old.size()[d2 as usize]);
            assert_eq!(new.ndim(), old.ndim() - 1);
            assert_eq!(new.size()[merge_dim], s1 * s2);
            assert_eq!(new.volume(), old.volume());
            for a in points(new.size()) {
                // Figure 6: i mod s1 in dim1, i / s1 in dim2; the other dimensions in order.
                let i = a[merge_dim];
                let mut rest = a.clone();
                rest.remove(merge_dim);
                let mut rest = rest.into_iter();
                let b: Vec<i64> = (0..4i64)
                    .map(|t| {
                        if t == d1 {
                            i % s1
                        } else if t == d2 {
                            i / s1
                        } else {
                            rest.next().unwrap()
                        }
                    })
                    .collect();
                assert_eq!(at(&new, &a), at(&old, &b), "merge({d1}, {d2}) at {a:?}");
            }
            // The manual's order (dim2 fastest) is swap-then-merge.
            let manual = old.swap(d1, d2).and_then(|x| x.merge(d1, d2)).unwrap();
            assert_eq!(manual.size(), new.size());
            for a in points(manual.size()) {
                let i = a[merge_dim];
                let mut b = old_point_with(&a, merge_dim, d1 as usize, d2 as usize);
                b[d1 as usize] = i / s2;
                b[d2 as usize] = i % s2;
                assert_eq!(at(&manual, &a), at(&old, &b));
            }
        }
    }
}

/// A point of the 4-d space before `merge(d1, d2)`, with the merged coordinates left at 0.
fn old_point_with(a: &[i64], merge_dim: usize, d1: usize, d2: usize) -> Vec<i64> {
    let mut rest: Vec<i64> = a.to_vec();
    rest.remove(merge_dim);
    let mut rest = rest.into_iter();
    (0..a.len() + 1)
        .map(|t| {
            if t == d1 || t == d2 {
                0
            } else {
                rest.next().unwrap()
            }
        })
        .collect()
}

#[test]
fn split_guarantees() {
    let old = four_d();
    for dim in 0..4usize {
        let s = old.size()[dim];
        for f in (1..=s).filter(|f| s % f == 0) {
            let new = old.split(dim as i64, f).unwrap();
            assert_eq!(new.ndim(), old.ndim() + 1);
            assert_eq!(new.size()[dim], f);
            assert_eq!(new.size()[dim] * new.size()[dim + 1], s);
            for a in points(new.size()) {
                let mut b = a.clone();
                let j = b.remove(dim + 1);
                b[dim] += j * f;
                assert_eq!(at(&new, &a), at(&old, &b));
            }
        }
    }
}

#[test]
fn swap_guarantees() {
    let old = four_d();
    for d1 in 0..4usize {
        for d2 in 0..4usize {
            let new = old.swap(d1 as i64, d2 as i64).unwrap();
            assert_eq!(new.size()[d1], old.size()[d2]);
            assert_eq!(new.size()[d2], old.size()[d1]);
            assert_eq!(new.ndim(), old.ndim());
            for a in points(new.size()) {
                let mut b = a.clone();
                b.swap(d1, d2);
                assert_eq!(at(&new, &a), at(&old, &b));
            }
        }
    }
}

#[test]
fn slice_guarantees() {
    let old = four_d();
    for dim in 0..4usize {
        let s = old.size()[dim];
        for lo in 0..s {
            for hi in lo..s {
                let new = old.slice(dim as i64, lo, hi).unwrap();
                assert_eq!(new.size()[dim], hi - lo + 1);
                for other in (0..4).filter(|&o| o != dim) {
                    assert_eq!(new.size()[other], old.size()[other]);
                }
                for a in points(new.size()) {
                    let mut b = a.clone();
                    b[dim] += lo;
                    assert_eq!(at(&new, &a), at(&old, &b));
                }
            }
        }
    }
}

#[test]
fn reverse_guarantees() {
    let old = four_d();
    for dim in 0..4usize {
        let new = old.reverse(dim as i64).unwrap();
        assert_eq!(new.size(), old.size());
        for a in points(new.size()) {
            let mut b = a.clone();
            b[dim] = old.size()[dim] - 1 - a[dim];
            assert_eq!(at(&new, &a), at(&old, &b));
        }
    }
}

#[test]
fn balance_split_guarantees() {
    // The manual's example: 6 into 2 is 3 x 2 (decreasing), not 2 x 3.
    let m = gpus(6, 2);
    let b = m.balance_split(0, 2).unwrap();
    assert_eq!(b.size(), &[3, 2, 2]);
    assert_eq!(b.ndim(), m.ndim() + 2 - 1);
    let cases: [(usize, i64, &[i64]); 7] = [
        (8, 3, &[2, 2, 2]),
        (12, 3, &[3, 2, 2]),
        (12, 2, &[4, 3]),
        (7, 2, &[7, 1]),
        (16, 2, &[4, 4]),
        (18, 3, &[3, 3, 2]),
        (5, 1, &[5]),
    ];
    for (n, parts, want) in cases {
        let b = gpus(n, 1).balance_split(0, parts).unwrap();
        assert_eq!(&b.size()[..want.len()], want, "{n} into {parts}");
        assert_eq!(b.ndim(), 2 + parts as usize - 1);
        // Same as split_into with those factors.
        let s = gpus(n, 1).split_into(0, want).unwrap();
        for p in points(b.size()) {
            assert_eq!(at(&b, &p), at(&s, &p));
        }
    }
}

#[test]
fn auto_split_guarantees_and_examples() {
    // The manual: a dimension of size 4 split w.r.t. (4, 2, 4) gives (2, 1, 2).
    let m = gpus(4, 2);
    let a = m.auto_split(0, &[4, 2, 4]).unwrap();
    assert_eq!(a.size(), &[2, 1, 2, 2]);
    assert_eq!(a.ndim(), m.ndim() + 3 - 1);
    // The paper's decompose examples (same objective).
    let cases: [(usize, &[i64], &[i64]); 4] = [
        (6, &[12, 18], &[2, 3]),
        (6, &[18, 12], &[3, 2]),
        (72, &[8, 9], &[8, 9]),
        (16, &[4, 8, 4], &[2, 4, 2]),
    ];
    for (n, task, want) in cases {
        let a = gpus(n, 1).auto_split(0, task).unwrap();
        assert_eq!(&a.size()[..want.len()], want, "{n} on {task:?}");
        assert_eq!(a.volume(), n as i64);
    }
}

#[test]
fn manual_auto3d_two_auto_splits() {
    // m_4d = m_2d.auto_split(0, ispace); m_6d = m_4d.auto_split(3, ispace / m_4d[:-1]);
    // nodes blockwise, GPUs cyclically; on 2 nodes x 4 GPUs every GPU gets the same load.
    let m2 = gpus(2, 4);
    let ispace = [4i64, 4, 2];
    let m4 = m2.auto_split(0, &ispace).unwrap();
    assert_eq!(m4.ndim(), 4);
    assert_eq!(m4.size()[3], 4);
    let sub: Vec<i64> = ispace
        .iter()
        .zip(&m4.size()[..3])
        .map(|(l, d)| l / d)
        .collect();
    let m6 = m4.auto_split(3, &sub).unwrap();
    assert_eq!(m6.ndim(), 6);
    assert_eq!(m6.size()[..3].iter().product::<i64>(), 2);
    assert_eq!(m6.size()[3..].iter().product::<i64>(), 4);
    let mut load = std::collections::BTreeMap::new();
    for ip in points(&ispace) {
        let upper = (0..3).map(|i| ip[i] * m6.size()[i] / ispace[i]);
        let lower = (0..3).map(|i| ip[i] % m6.size()[i + 3]);
        let point: Vec<i64> = upper.chain(lower).collect();
        *load.entry(ni(&m6, &point)).or_insert(0) += 1;
    }
    assert_eq!(load.len(), 8);
    assert!(load.values().all(|&c| c == 4), "{load:?}");
}

#[test]
fn split_into_is_repeated_split() {
    let m = gpus(12, 2);
    let a = m.split_into(0, &[2, 3, 2]).unwrap();
    let b = m.split(0, 2).and_then(|x| x.split(1, 3)).unwrap();
    assert_eq!(a.size(), &[2, 3, 2, 2]);
    assert_eq!(a.size(), b.size());
    for p in points(a.size()) {
        assert_eq!(at(&a, &p), at(&b, &p));
        // d_1 varies fastest: node = a0 + 2*a1 + 6*a2.
        assert_eq!(at(&a, &p).node as i64, p[0] + 2 * p[1] + 6 * p[2]);
    }
    let same = m.split_into(1, &[2]).unwrap();
    assert_eq!(same.size(), m.size());
}

#[test]
fn machine_kinds_and_cli_spec() {
    let m: Machine = "2x4".parse().unwrap();
    for k in ProcKind::ALL {
        assert_eq!(m.space(k).unwrap().size(), &[2, 4]);
        assert_eq!(k.name().parse::<ProcKind>().unwrap(), k);
        assert_eq!(k.to_string(), k.name());
    }
    assert_eq!(m.nodes(), 2);
    assert_eq!(m.procs_per_node(ProcKind::Omp), 4);
    let names: Vec<&str> = ProcKind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(names, ["CPU", "GPU", "OMP", "IO", "PY", "PROC"]);
    let mixed = Machine::new(3)
        .with_procs(ProcKind::Cpu, 1)
        .with_procs(ProcKind::Gpu, 4);
    assert_eq!(mixed.space(ProcKind::Cpu).unwrap().size(), &[3, 1]);
    let g = mixed.space(ProcKind::Gpu).unwrap();
    assert_eq!(g.size(), &[3, 4]);
    assert!(g.is_original());
    assert_eq!(g.kind(), ProcKind::Gpu);
    assert_eq!(g.to_string(), "MSpace(GPU, (3, 4))");
    assert_eq!(
        at(&g, &[2, 3]).to_string(),
        "node 2 GPU 3",
        "Processor display"
    );
    assert!(mixed.space(ProcKind::Omp).is_err());
}

/// `decompose` is `auto_split` under the paper's name: the §4.3 examples, and its errors name
/// `decompose`.
#[test]
fn decompose_is_auto_split_with_its_own_name() {
    let m = MSpace::new(ProcKind::Gpu, 1, 6).unwrap();
    assert_eq!(m.decompose(1, &[12, 18]).unwrap().size(), &[1, 2, 3]);
    assert_eq!(m.decompose(1, &[18, 12]).unwrap().size(), &[1, 3, 2]);
    let e = m.decompose(1, &[0, 3]).unwrap_err();
    assert!(e.to_string().starts_with("decompose"), "{e}");
}
