//! Tests of `decompose` (paper §4, appendix A.2/A.3): the paper's worked examples, each objective
//! option, input validation, and property tests against a brute-force enumeration and the
//! greedy baselines.

use diffuse_mapper::decompose::{
    communication_volume, decompose, decompose_with, factorization_count, factorizations, greedy,
    greedy_workload, halo_volume, objective_value, objective_volume, points_per_processor,
    prime_factorization, transpose_volume, workload, DecomposeError, Objective, Rational,
    MAX_CANDIDATES,
};
use proptest::prelude::*;

fn r(n: u128, d: u128) -> Rational {
    Rational::new(n, d).unwrap()
}

fn ints(xs: &[u128]) -> Vec<Rational> {
    xs.iter().map(|&x| Rational::from_integer(x)).collect()
}

// ---------------------------------------------------------------------------------------------
// The paper's examples.
// ---------------------------------------------------------------------------------------------

/// §4.1 / Figure 8: 6 processors on (12, 18) and (18, 12). Greedy picks (3, 2) for both, which
/// costs 96 elements on (12, 18) and 84 on (18, 12); decompose picks (2, 3) for (12, 18), also
/// 84.
#[test]
fn figure_8_six_processors() {
    assert_eq!(greedy(6, 2).unwrap(), vec![3, 2]);
    assert_eq!(communication_volume(&[3, 2], &[12, 18]).unwrap(), 96);
    assert_eq!(communication_volume(&[3, 2], &[18, 12]).unwrap(), 84);

    let a = decompose(6, &[12, 18]).unwrap();
    assert_eq!(a, vec![2, 3]);
    assert_eq!(communication_volume(&a, &[12, 18]).unwrap(), 84);
    assert_eq!(workload(&a, &[12, 18]).unwrap(), ints(&[6, 6]));

    let b = decompose(6, &[18, 12]).unwrap();
    assert_eq!(b, vec![3, 2]);
    assert_eq!(communication_volume(&b, &[18, 12]).unwrap(), 84);
    assert_eq!(workload(&b, &[18, 12]).unwrap(), ints(&[6, 6]));

    // The four candidates of §4.1 and their volumes on (12, 18).
    assert_eq!(
        factorizations(6, 2).unwrap(),
        vec![vec![1, 6], vec![2, 3], vec![3, 2], vec![6, 1]]
    );
    let volumes: Vec<u128> = [[6, 1], [3, 2], [2, 3], [1, 6]]
        .iter()
        .map(|f| communication_volume(f, &[12, 18]).unwrap())
        .collect();
    assert_eq!(volumes, vec![180, 96, 84, 120]);
}

/// §4.3: 72 processors on (8, 9). The exact search balances the workload to (1, 1); the greedy
/// assignment of prime factors 2, 2, 2, 3, 3 ends at (4/3, 3/4).
#[test]
fn section_4_3_seventy_two_processors() {
    let best = decompose(72, &[8, 9]).unwrap();
    assert_eq!(best, vec![8, 9]);
    assert_eq!(workload(&best, &[8, 9]).unwrap(), ints(&[1, 1]));

    let g = greedy_workload(72, &[8, 9]).unwrap();
    assert_eq!(g, vec![6, 12]);
    assert_eq!(workload(&g, &[8, 9]).unwrap(), vec![r(4, 3), r(3, 4)]);

    let iso = Objective::Isotropic;
    let v_best = objective_value(&iso, &best, &[8, 9]).unwrap();
    let v_greedy = objective_value(&iso, &g, &[8, 9]).unwrap();
    assert_eq!(v_best, Rational::from_integer(2));
    assert_eq!(v_greedy, r(25, 12));
    assert!(v_best < v_greedy);
    assert!(
        communication_volume(&best, &[8, 9]).unwrap() < communication_volume(&g, &[8, 9]).unwrap()
    );

    // Algorithm 1 (shape-blind) is not better either.
    let chapel = greedy(72, 2).unwrap();
    assert_eq!(chapel, vec![12, 6]);
    assert_eq!(workload(&chapel, &[8, 9]).unwrap(), vec![r(2, 3), r(3, 2)]);
    assert!(v_best < objective_value(&iso, &chapel, &[8, 9]).unwrap());
}

/// §4.2 / Figure 9: (4, 8, 4) on 16 processors gives the workload (2, 2, 2).
#[test]
fn figure_9_three_dimensions() {
    let f = decompose(16, &[4, 8, 4]).unwrap();
    assert_eq!(f, vec![2, 4, 2]);
    assert_eq!(workload(&f, &[4, 8, 4]).unwrap(), ints(&[2, 2, 2]));
    assert_eq!(points_per_processor(&f, &[4, 8, 4]).unwrap(), r(8, 1));
    // 2S = Σ_m 2(d_m − 1) Π_{n≠m} l_n = 64 + 96 + 64.
    assert_eq!(communication_volume(&f, &[4, 8, 4]).unwrap(), 224);
    // Figure 9's 2D example: 4 processors, (2, 2) grid.
    assert_eq!(decompose(4, &[10, 10]).unwrap(), vec![2, 2]);
    assert_eq!(communication_volume(&[2, 2], &[10, 10]).unwrap(), 40);
}

/// §4.3: 16 = 2^4 over 3 dimensions has C(6, 2) = 15 factorizations; 48 = 2^4 · 3 has 15 · 3.
#[test]
fn section_4_3_search_space_size() {
    assert_eq!(factorization_count(16, 3).unwrap(), 15);
    assert_eq!(factorizations(16, 3).unwrap().len(), 15);
    assert_eq!(factorization_count(48, 3).unwrap(), 45);
    assert_eq!(factorizations(48, 3).unwrap().len(), 45);
    let d = decompose_with(48, &[4, 8, 4], &Objective::Isotropic).unwrap();
    assert_eq!(d.candidates, 45);
    assert_eq!(d.factors.iter().product::<u64>(), 48);
}

/// Algorithm 1 as written: primes ascending into the smallest factor, sorted descending.
#[test]
fn algorithm_1_greedy() {
    assert_eq!(greedy(1, 3).unwrap(), vec![1, 1, 1]);
    assert_eq!(greedy(7, 1).unwrap(), vec![7]);
    assert_eq!(greedy(16, 3).unwrap(), vec![4, 2, 2]);
    // Shape-blind and not even balanced: 12 = 2·2·3 ends at (6, 2), not (4, 3).
    assert_eq!(greedy(12, 2).unwrap(), vec![6, 2]);
    assert_eq!(greedy(30, 2).unwrap(), vec![10, 3]);
    assert_eq!(greedy(64, 3).unwrap(), vec![4, 4, 4]);
}

// ---------------------------------------------------------------------------------------------
// The objective options.
// ---------------------------------------------------------------------------------------------

#[test]
fn isotropic_objective_value() {
    let v = objective_value(&Objective::Isotropic, &[3, 2], &[12, 18]).unwrap();
    assert_eq!(v, r(3, 12).checked_add(r(2, 18)).unwrap());
    assert_eq!(v, r(13, 36));
    // V = Σ_n d_n Π_{m≠n} l_m = 3·18 + 2·12.
    let vol = objective_volume(&Objective::Isotropic, &[3, 2], &[12, 18]).unwrap();
    assert_eq!(vol, Rational::from_integer(78));
    assert_eq!(halo_volume(&[3, 2], &[12, 18], &[1, 1]).unwrap(), 78);
    // Ties on a square space go to the lexicographically greatest tuple (as Algorithm 1 sorts).
    assert_eq!(decompose(6, &[6, 6]).unwrap(), vec![3, 2]);
    assert_eq!(decompose(2, &[5, 5, 5]).unwrap(), vec![2, 1, 1]);
    assert_eq!(decompose(1, &[3, 4]).unwrap(), vec![1, 1]);
    assert_eq!(decompose(13, &[7]).unwrap(), vec![13]);
}

#[test]
fn anisotropic_halo_objective() {
    // Halo 3 in dimension 1 makes cutting it expensive: all 4 processors go to dimension 0.
    let halo = Objective::AnisotropicHalo { widths: vec![1, 3] };
    let d = decompose_with(4, &[12, 12], &halo).unwrap();
    assert_eq!(d.factors, vec![4, 1]);
    assert_eq!(d.objective, r(7, 12));
    assert_eq!(decompose(4, &[12, 12]).unwrap(), vec![2, 2]);
    // V = Σ_n d_n h_n Π_{m≠n} l_m = 4·1·12 + 1·3·12.
    assert_eq!(halo_volume(&[4, 1], &[12, 12], &[1, 3]).unwrap(), 84);
    assert_eq!(
        objective_volume(&halo, &[4, 1], &[12, 12]).unwrap(),
        Rational::from_integer(84)
    );
    assert_eq!(
        objective_value(&halo, &[2, 2], &[12, 12]).unwrap(),
        r(8, 12)
    );
    // Unit widths are the isotropic objective.
    let unit = Objective::AnisotropicHalo { widths: vec![1, 1] };
    assert_eq!(
        decompose_with(6, &[12, 18], &unit).unwrap().factors,
        vec![2, 3]
    );
    // A width of 0 makes a dimension free to cut.
    let free = Objective::AnisotropicHalo { widths: vec![0, 1] };
    assert_eq!(
        decompose_with(8, &[4, 100], &free).unwrap().factors,
        vec![8, 1]
    );
}

#[test]
fn transpose_objective() {
    // Pure all-to-all along dimension 0: keep that dimension on one processor.
    let pure = Objective::Transpose {
        halo_widths: vec![0, 0],
        transposed: vec![0],
    };
    let d = decompose_with(4, &[8, 8], &pure).unwrap();
    assert_eq!(d.factors, vec![1, 4]);
    assert_eq!(d.objective, Rational::ZERO);

    // Halo plus transpose: (2, 2) costs 1/4 + 1/4 + 1/2, (1, 4) costs 1/8 + 1/2 + 0.
    let mixed = Objective::Transpose {
        halo_widths: vec![1, 1],
        transposed: vec![0],
    };
    let d = decompose_with(4, &[8, 8], &mixed).unwrap();
    assert_eq!(d.factors, vec![1, 4]);
    assert_eq!(d.objective, r(5, 8));
    assert_eq!(
        objective_value(&mixed, &[2, 2], &[8, 8]).unwrap(),
        Rational::from_integer(1)
    );
    assert_eq!(objective_value(&mixed, &[4, 1], &[8, 8]).unwrap(), r(11, 8));
    assert_eq!(decompose(4, &[8, 8]).unwrap(), vec![2, 2]);

    // V*_n = (1 − 1/d_n) Π l = (1 − 1/4)·64 = 48 = (1 − 1/d_n)(Π w) d with w = (2, 8).
    assert_eq!(
        transpose_volume(&[4, 1], &[8, 8], 0).unwrap(),
        Rational::from_integer(48)
    );
    assert_eq!(
        transpose_volume(&[4, 1], &[8, 8], 1).unwrap(),
        Rational::ZERO
    );
    assert_eq!(transpose_volume(&[3, 1], &[8, 8], 0).unwrap(), r(128, 3));
    // Total V + Σ V*: 4·8 + 1·8 + 48.
    assert_eq!(
        objective_volume(&mixed, &[4, 1], &[8, 8]).unwrap(),
        Rational::from_integer(88)
    );

    // Transposes along both dimensions of a 3D space push processors to the third one.
    let both = Objective::Transpose {
        halo_widths: vec![0, 0, 0],
        transposed: vec![1, 0],
    };
    assert_eq!(
        decompose_with(8, &[4, 4, 4], &both).unwrap().factors,
        vec![1, 1, 8]
    );
}

// ---------------------------------------------------------------------------------------------
// Invalid input.
// ---------------------------------------------------------------------------------------------

#[test]
fn rejects_bad_input() {
    use DecomposeError as E;
    assert_eq!(decompose(0, &[4, 4]), Err(E::ZeroProcessors));
    assert_eq!(decompose(4, &[]), Err(E::EmptyShape));
    assert_eq!(decompose(4, &[4, 0, 2]), Err(E::ZeroExtent { index: 1 }));
    assert_eq!(greedy(0, 2), Err(E::ZeroProcessors));
    assert_eq!(greedy(4, 0), Err(E::EmptyShape));
    assert_eq!(greedy_workload(4, &[0]), Err(E::ZeroExtent { index: 0 }));
    assert_eq!(factorizations(4, 0), Err(E::EmptyShape));
    assert_eq!(factorization_count(0, 2), Err(E::ZeroProcessors));
    assert_eq!(prime_factorization(0), Err(E::ZeroProcessors));

    assert_eq!(
        workload(&[2], &[4, 4]),
        Err(E::LengthMismatch {
            what: "the factorization",
            expected: 2,
            got: 1
        })
    );
    assert_eq!(
        communication_volume(&[2, 0], &[4, 4]),
        Err(E::ZeroFactor { index: 1 })
    );
    assert_eq!(
        transpose_volume(&[2, 2], &[4, 4], 2),
        Err(E::DimensionOutOfRange { dim: 2, rank: 2 })
    );

    let short = Objective::AnisotropicHalo { widths: vec![1] };
    assert!(matches!(
        decompose_with(4, &[4, 4], &short),
        Err(E::LengthMismatch {
            expected: 2,
            got: 1,
            ..
        })
    ));
    let out_of_range = Objective::Transpose {
        halo_widths: vec![1, 1],
        transposed: vec![2],
    };
    assert_eq!(
        decompose_with(4, &[4, 4], &out_of_range),
        Err(E::DimensionOutOfRange { dim: 2, rank: 2 })
    );
    let duplicate = Objective::Transpose {
        halo_widths: vec![1, 1],
        transposed: vec![1, 1],
    };
    assert_eq!(
        decompose_with(4, &[4, 4], &duplicate),
        Err(E::DuplicateDimension { dim: 1 })
    );
}

#[test]
fn reports_overflow_and_huge_search_spaces() {
    use DecomposeError as E;
    // 2^63 over 40 dimensions: C(102, 39) factorizations, far beyond the limit.
    let err = decompose(1 << 63, &[1; 40]).unwrap_err();
    assert!(matches!(
        err,
        E::SearchSpaceTooLarge {
            limit: MAX_CANDIDATES,
            ..
        }
    ));
    assert!(err.to_string().contains("factorizations"));
    // Products of extents that do not fit in u128.
    let big = [u64::MAX; 3];
    assert!(matches!(
        points_per_processor(&[1, 1, 1], &big),
        Err(E::Overflow { .. })
    ));
    assert!(matches!(
        communication_volume(&[2, 2, 2], &big),
        Err(E::Overflow { .. })
    ));
    // Large but representable inputs work.
    let f = decompose(u64::MAX, &[u64::MAX]).unwrap();
    assert_eq!(f, vec![u64::MAX]);
    assert_eq!(
        workload(&f, &[u64::MAX]).unwrap(),
        vec![Rational::from_integer(1)]
    );
    assert_eq!(
        greedy(u64::MAX, 2).unwrap().iter().product::<u64>(),
        u64::MAX
    );
    let e = decompose_with(1 << 40, &[u64::MAX, 3], &Objective::Isotropic).unwrap();
    assert_eq!(e.factors.iter().product::<u64>(), 1 << 40);
    // Error messages name what went wrong.
    assert_eq!(
        E::ZeroExtent { index: 2 }.to_string(),
        "extent 2 of the task space is 0; every extent must be positive"
    );
}

// ---------------------------------------------------------------------------------------------
// Property tests.
// ---------------------------------------------------------------------------------------------

/// Every ordered k-tuple of positive integers with product d, by recursion over divisors
/// (independent of the prime-power enumeration in the crate).
fn brute_force(d: u64, k: usize) -> Vec<Vec<u64>> {
    if k == 1 {
        return vec![vec![d]];
    }
    let mut out = Vec::new();
    for first in 1..=d {
        if d.is_multiple_of(first) {
            for mut rest in brute_force(d / first, k - 1) {
                rest.insert(0, first);
                out.push(rest);
            }
        }
    }
    out
}

/// The isotropic objective in f64, written independently of the crate.
fn sum_d_over_l(factors: &[u64], shape: &[u64]) -> f64 {
    factors
        .iter()
        .zip(shape)
        .map(|(&d, &l)| d as f64 / l as f64)
        .sum()
}

fn shape_strategy() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(1u64..=40, 1..=3)
}

fn objective_strategy(rank: usize) -> impl Strategy<Value = Objective> {
    let widths = prop::collection::vec(0u64..=4, rank);
    prop_oneof![
        Just(Objective::Isotropic),
        widths
            .clone()
            .prop_map(|widths| Objective::AnisotropicHalo { widths }),
        (
            widths,
            prop::sample::subsequence((0..rank).collect::<Vec<_>>(), 0..=rank)
        )
            .prop_map(|(halo_widths, transposed)| Objective::Transpose {
                halo_widths,
                transposed
            }),
    ]
}

fn problem_strategy() -> impl Strategy<Value = (u64, Vec<u64>, Objective)> {
    (1u64..=64, shape_strategy()).prop_flat_map(|(d, shape)| {
        let rank = shape.len();
        (Just(d), Just(shape), objective_strategy(rank))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The §4.3 enumeration yields exactly the ordered factorizations, as many as the formula says.
    #[test]
    fn enumeration_is_complete(d in 1u64..=64, k in 1usize..=3) {
        let mut expected = brute_force(d, k);
        expected.sort();
        prop_assert_eq!(factorizations(d, k).unwrap(), expected.clone());
        prop_assert_eq!(factorization_count(d, k).unwrap(), expected.len() as u128);
    }

    /// The product of the chosen factors is d; the result is optimal over the brute force,
    /// never worse than either greedy baseline, and the tie-break is the lexicographic maximum.
    #[test]
    fn decompose_is_optimal((d, shape, objective) in problem_strategy()) {
        let k = shape.len();
        let best = decompose_with(d, &shape, &objective).unwrap();
        prop_assert_eq!(best.factors.len(), k);
        prop_assert_eq!(best.factors.iter().product::<u64>(), d);
        prop_assert_eq!(
            best.objective,
            objective_value(&objective, &best.factors, &shape).unwrap()
        );
        let all = brute_force(d, k);
        prop_assert_eq!(best.candidates, all.len() as u128);
        for f in &all {
            let v = objective_value(&objective, f, &shape).unwrap();
            prop_assert!(best.objective <= v, "{:?} beats {:?}", f, best.factors);
            if v == best.objective {
                prop_assert!(f <= &best.factors, "tie {:?} should win over {:?}", f, best.factors);
            }
        }
        let chapel = greedy(d, k).unwrap();
        prop_assert_eq!(chapel.iter().product::<u64>(), d);
        prop_assert!(best.objective <= objective_value(&objective, &chapel, &shape).unwrap());
        let balanced = greedy_workload(d, &shape).unwrap();
        prop_assert_eq!(balanced.iter().product::<u64>(), d);
        prop_assert!(best.objective <= objective_value(&objective, &balanced, &shape).unwrap());
    }

    /// The isotropic objective agrees with an independent floating-point evaluation, and the
    /// minimiser of Σ d_m/l_m also minimises the §4.2 communication volume 2S.
    #[test]
    fn isotropic_matches_volume(d in 1u64..=64, shape in shape_strategy()) {
        let best = decompose(d, &shape).unwrap();
        let best_volume = communication_volume(&best, &shape).unwrap();
        let best_f64 = sum_d_over_l(&best, &shape);
        for f in brute_force(d, shape.len()) {
            prop_assert!(best_f64 <= sum_d_over_l(&f, &shape) + 1e-12);
            prop_assert!(best_volume <= communication_volume(&f, &shape).unwrap());
            let v = objective_value(&Objective::Isotropic, &f, &shape).unwrap();
            prop_assert!((v.to_f64() - sum_d_over_l(&f, &shape)).abs() < 1e-12);
        }
    }

    /// 2S = 2·V − SA(l) (§4.2 vs appendix A.3.1 with unit widths), and V = Σ d_m/l_m · Π l.
    #[test]
    fn volume_identities(d in 1u64..=64, shape in shape_strategy()) {
        let k = shape.len();
        let ones = vec![1u64; k];
        let total: u128 = shape.iter().map(|&l| u128::from(l)).product();
        let surface: u128 = (0..k)
            .map(|m| 2 * shape.iter().enumerate().filter(|&(n, _)| n != m).map(|(_, &l)| u128::from(l)).product::<u128>())
            .sum();
        for f in brute_force(d, k) {
            let two_s = communication_volume(&f, &shape).unwrap();
            let v = halo_volume(&f, &shape, &ones).unwrap();
            prop_assert_eq!(two_s + surface, 2 * v);
            prop_assert_eq!(
                objective_volume(&Objective::Isotropic, &f, &shape).unwrap(),
                Rational::from_integer(v)
            );
            // Π w = Π l / d.
            let w = workload(&f, &shape).unwrap();
            let pw = w.iter().try_fold(Rational::from_integer(1), |acc, &x| {
                Rational::new(acc.numer() * x.numer(), acc.denom() * x.denom())
            }).unwrap();
            prop_assert_eq!(pw, r(total, u128::from(d)));
            prop_assert_eq!(points_per_processor(&f, &shape).unwrap(), pw);
        }
    }

    /// Prime factorization multiplies back to d, with increasing primes.
    #[test]
    fn prime_factorization_roundtrip(d in 1u64..=1_000_000) {
        let pf = prime_factorization(d).unwrap();
        let mut prod = 1u64;
        for w in pf.windows(2) {
            prop_assert!(w[0].0 < w[1].0);
        }
        for &(p, a) in &pf {
            prop_assert!((2..p).take_while(|q| q * q <= p).all(|q| p % q != 0));
            prod *= p.pow(a);
        }
        prop_assert_eq!(prod, d);
    }

    /// Rational comparison agrees with cross-multiplication where that does not overflow.
    #[test]
    fn rational_order(a in 0u128..1_000_000, b in 1u128..1_000_000, c in 0u128..1_000_000, e in 1u128..1_000_000) {
        prop_assert_eq!(r(a, b).cmp(&r(c, e)), (a * e).cmp(&(c * b)));
    }
}
