//! Property tests: random machines up to 4 x 8 and random chains of up to 5 primitives.

use super::{at, points};
use diffuse_mapper::machine::{MSpace, Machine, ProcKind};
use proptest::prelude::*;
use std::collections::BTreeSet;

fn base(nodes: usize, per_node: usize) -> MSpace {
    Machine::uniform(nodes, per_node)
        .space(ProcKind::Gpu)
        .expect("a non-empty machine")
}

fn divisors(s: i64) -> Vec<i64> {
    (1..=s).filter(|d| s % d == 0).collect()
}

/// One random primitive, its parameters drawn from raw numbers adapted to the current shape.
#[derive(Debug, Clone)]
struct RawOp {
    which: u8,
    r: [u64; 4],
}

fn raw_op() -> impl Strategy<Value = RawOp> {
    (0u8..7, any::<[u64; 4]>()).prop_map(|(which, r)| RawOp { which, r })
}

/// Figure 6 (and the manual for slice/reverse), written independently of the crate: the point
/// of `old` (shape `old_shape`) that point `a` of the transformed space denotes.
#[derive(Debug, Clone)]
enum Reference {
    Split { dim: usize, factors: Vec<i64> },
    Merge { p: usize, q: usize, sp: i64 },
    Swap { p: usize, q: usize },
    Slice { dim: usize, lo: i64 },
    Reverse { dim: usize, size: i64 },
}

impl Reference {
    fn back(&self, a: &[i64]) -> Vec<i64> {
        let mut b = a.to_vec();
        match self {
            Reference::Split { dim, factors } => {
                // b_dim = a_dim + d1 * (a_dim+1 + d2 * (…)).
                let k = factors.len();
                let mut v = 0;
                for m in (0..k).rev() {
                    v = v * factors[m] + a[dim + m];
                }
                b.drain(dim + 1..dim + k);
                b[*dim] = v;
            }
            Reference::Merge { p, q, sp } => {
                let (p, q) = (*p, *q);
                let n = a.len() + 1;
                let m = if p < q { p } else { p - 1 };
                b = (0..n)
                    .map(|t| {
                        if t == p {
                            a[m] % sp
                        } else if t == q {
                            a[m] / sp
                        } else {
                            // Figure 6 for p < q; the same order-preserving rule for p > q.
                            let lo = p.min(q);
                            let hi = p.max(q);
                            if t < lo {
                                a[t]
                            } else if t < hi {
                                if p < q {
                                    a[t]
                                } else {
                                    a[t - 1]
                                }
                            } else {
                                a[t - 1]
                            }
                        }
                    })
                    .collect();
            }
            Reference::Swap { p, q } => b.swap(*p, *q),
            Reference::Slice { dim, lo } => b[*dim] += lo,
            Reference::Reverse { dim, size } => b[*dim] = size - 1 - a[*dim],
        }
        b
    }
}

/// Applies `op` to `m`; `None` when the op does not apply (e.g. merge of a 1-d space).
fn apply(m: &MSpace, op: &RawOp) -> Option<(MSpace, Reference)> {
    let n = m.ndim();
    let s = m.size();
    let dim = (op.r[0] % n as u64) as usize;
    let size = s[dim];
    let out = match op.which {
        0 => {
            let ds = divisors(size);
            let f = ds[(op.r[1] % ds.len() as u64) as usize];
            let new = m.split(dim as i64, f).expect("a divisor");
            (
                new,
                Reference::Split {
                    dim,
                    factors: vec![f, size / f],
                },
            )
        }
        1 => {
            if n < 2 {
                return None;
            }
            let p = dim;
            let q = (p + 1 + (op.r[1] % (n as u64 - 1)) as usize) % n;
            let new = m.merge(p as i64, q as i64).expect("distinct dims");
            (new, Reference::Merge { p, q, sp: s[p] })
        }
        2 => {
            let q = (op.r[1] % n as u64) as usize;
            (
                m.swap(dim as i64, q as i64).expect("valid dims"),
                Reference::Swap { p: dim, q },
            )
        }
        3 => {
            let lo = (op.r[1] % size as u64) as i64;
            let hi = lo + (op.r[2] % (size - lo) as u64) as i64;
            (
                m.slice(dim as i64, lo, hi).expect("in range"),
                Reference::Slice { dim, lo },
            )
        }
        4 => (
            m.reverse(dim as i64).expect("valid dim"),
            Reference::Reverse { dim, size },
        ),
        5 => {
            let parts = 1 + (op.r[1] % 3) as i64;
            let new = m.balance_split(dim as i64, parts).expect("small search");
            let factors = new.size()[dim..dim + parts as usize].to_vec();
            assert!(factors.windows(2).all(|w| w[0] >= w[1]), "{factors:?}");
            (new, Reference::Split { dim, factors })
        }
        _ => {
            let k = 1 + (op.r[1] % 3) as usize;
            let task: Vec<i64> = (0..k)
                .map(|i| 1 + ((op.r[2] >> (8 * i)) % 12) as i64)
                .collect();
            let new = m.auto_split(dim as i64, &task).expect("small search");
            let factors = new.size()[dim..dim + k].to_vec();
            (new, Reference::Split { dim, factors })
        }
    };
    Some(out)
}

/// Asserts that `new` and `old` agree through `reference` at every point of `new`.
fn check_reference(old: &MSpace, new: &MSpace, reference: &Reference) {
    for a in points(new.size()) {
        let b = reference.back(&a);
        assert_eq!(
            at(new, &a),
            at(old, &b),
            "{reference:?}: {new} at {a:?} vs {old} at {b:?}"
        );
    }
}

/// Asserts that `x` and `y` are the same space point for point.
fn same_mapping(x: &MSpace, y: &MSpace) {
    assert_eq!(x.size(), y.size());
    for p in points(x.size()) {
        assert_eq!(at(x, &p), at(y, &p));
    }
}

fn machine() -> impl Strategy<Value = (usize, usize)> {
    (1usize..=4, 1usize..=8)
}

/// A random space: a random machine after a random chain.
fn space() -> impl Strategy<Value = MSpace> {
    (machine(), prop::collection::vec(raw_op(), 0..=5)).prop_map(|((n, p), ops)| {
        let mut m = base(n, p);
        for op in &ops {
            if let Some((new, _)) = apply(&m, op) {
                m = new;
            }
        }
        m
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_chains_map_back_to_valid_processors(
        (nodes, per_node) in machine(),
        ops in prop::collection::vec(raw_op(), 0..=5),
    ) {
        let mut m = base(nodes, per_node);
        let mut sliced = false;
        for op in &ops {
            if let Some((new, reference)) = apply(&m, op) {
                check_reference(&m, &new, &reference);
                sliced |= matches!(reference, Reference::Slice { .. });
                m = new;
            }
        }
        let mut seen = BTreeSet::new();
        for a in points(m.size()) {
            let p = at(&m, &a);
            prop_assert_eq!(p.kind, ProcKind::Gpu);
            prop_assert!(p.node < nodes && p.index < per_node);
            prop_assert!(seen.insert((p.node, p.index)), "two points on {}", p);
            prop_assert_eq!(m.point_of(&p), Some(a));
        }
        // Always injective; a bijection onto the machine unless the chain sliced.
        if !sliced {
            prop_assert_eq!(seen.len(), nodes * per_node);
            prop_assert_eq!(m.volume(), (nodes * per_node) as i64);
        }
        prop_assert_eq!(seen.len() as i64, m.volume());
    }

    #[test]
    fn merge_inverts_split(m in space(), d in any::<u64>(), f in any::<u64>()) {
        let dim = (d % m.ndim() as u64) as usize;
        let ds = divisors(m.size()[dim]);
        let f = ds[(f % ds.len() as u64) as usize];
        let back = m.split(dim as i64, f).and_then(|x| x.merge(dim as i64, dim as i64 + 1));
        same_mapping(&back.unwrap(), &m);
    }

    #[test]
    fn split_inverts_merge(m in space(), d in any::<u64>()) {
        prop_assume!(m.ndim() >= 2);
        let p = (d % (m.ndim() as u64 - 1)) as usize;
        let sp = m.size()[p];
        let back = m.merge(p as i64, p as i64 + 1).and_then(|x| x.split(p as i64, sp));
        same_mapping(&back.unwrap(), &m);
        // merge(p + 1, p) is p + 1 fastest: splitting it back swaps the two dimensions.
        let sq = m.size()[p + 1];
        let swapped = m.merge(p as i64 + 1, p as i64).and_then(|x| x.split(p as i64, sq));
        same_mapping(&swapped.unwrap(), &m.swap(p as i64, p as i64 + 1).unwrap());
    }

    #[test]
    fn swap_is_an_involution(m in space(), d1 in any::<u64>(), d2 in any::<u64>()) {
        let p = (d1 % m.ndim() as u64) as i64;
        let q = (d2 % m.ndim() as u64) as i64;
        let once = m.swap(p, q).unwrap();
        let twice = once.swap(p, q).unwrap();
        same_mapping(&twice, &m);
        prop_assert_eq!(once.volume(), m.volume());
    }

    #[test]
    fn reverse_is_an_involution(m in space(), d in any::<u64>()) {
        let dim = (d % m.ndim() as u64) as i64;
        same_mapping(&m.reverse(dim).and_then(|x| x.reverse(dim)).unwrap(), &m);
    }

    #[test]
    fn slice_stays_within_the_slice(m in space(), d in any::<u64>(), a in any::<u64>(), b in any::<u64>()) {
        let dim = (d % m.ndim() as u64) as usize;
        let s = m.size()[dim];
        let lo = (a % s as u64) as i64;
        let hi = lo + (b % (s - lo) as u64) as i64;
        let sl = m.slice(dim as i64, lo, hi).unwrap();
        for pt in points(sl.size()) {
            let p = at(&sl, &pt);
            let in_m = m.point_of(&p).expect("a processor of m");
            prop_assert!(lo <= in_m[dim] && in_m[dim] <= hi);
            prop_assert_eq!(in_m[dim], pt[dim] + lo);
            prop_assert_eq!(sl.point_of(&p), Some(pt));
        }
        // Processors outside the slice have no point in it.
        for pt in points(m.size()) {
            let p = at(&m, &pt);
            let inside = lo <= pt[dim] && pt[dim] <= hi;
            prop_assert_eq!(sl.point_of(&p).is_some(), inside);
        }
    }

    #[test]
    fn primitives_never_panic_on_arbitrary_arguments(
        m in space(),
        calls in prop::collection::vec((0u8..9, any::<i64>(), any::<i64>(), any::<i64>()), 1..8),
        small in prop::collection::vec(-3i64..20, 0..5),
    ) {
        let mut cur = m;
        for (which, x, y, z) in calls {
            // Mix arbitrary values with small ones so that some calls succeed.
            let (x, y, z) = (x % 7 - 1, if y % 3 == 0 { y } else { y % 9 }, z % 9);
            let r = match which {
                0 => cur.split(x, y),
                1 => cur.merge(x, y),
                2 => cur.swap(x, y),
                3 => cur.slice(x, y, z),
                4 => cur.reverse(x),
                5 => cur.balance_split(x, y),
                6 => cur.auto_split(x, &small),
                7 => cur.split_into(x, &small),
                _ => cur.to_processor(&small).map(|_| cur.clone()),
            };
            if let Ok(next) = r {
                if next.volume() <= 64 {
                    cur = next;
                }
            }
        }
        for a in points(cur.size()) {
            prop_assert!(cur.to_processor(&a).is_ok());
        }
    }
}
