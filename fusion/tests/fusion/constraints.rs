//! One minimal window per fusion constraint of Figure 7 in which that constraint alone
//! forbids fusing two tasks, each with a control that changes only that aspect and fuses;
//! plus the cases the constraints deliberately allow (reductions after reductions, reads of
//! one store through several partitions) and the `PrefixState` interface.

use diffuse_fusion::{PrefixState, Violation};
use diffuse_ir::{Partition, Store};

use crate::common::{
    analyse, blocked, ctx, group, longest_fusible_prefix, store, task, view_blocked, PROD, R, RW,
    SUM, W,
};

const L: [i64; 1] = [4];

/// Four fresh, live 1-D stores of 16 elements, the blocked tiling `p` they share over `L`,
/// and another partition `q` of them (a shifted view, tiled over `L` too).
fn setup() -> ([Store; 4], Partition, Partition) {
    let c = ctx();
    let s = [
        store(&c, &[16]),
        store(&c, &[16]),
        store(&c, &[16]),
        store(&c, &[16]),
    ];
    let p = blocked(&s[0], &L);
    let q = view_blocked(&s[0], &[2], &[12], &L);
    assert_ne!(p, q);
    (s, p, q)
}

/// Asserts that the two-task `window` splits into two singleton groups, the first stopped
/// by `v`, and that `PrefixState` reports the same violation.
fn assert_split(window: &[diffuse_ir::IndexTask], v: Violation) {
    assert_eq!(longest_fusible_prefix(window), (1, Some(v)));
    assert_eq!(
        analyse(window).groups,
        vec![group(0..1, &[], Some(v)), group(1..2, &[], None)]
    );
    let mut state = PrefixState::new();
    assert_eq!(state.admits(&window[0]), Ok(()));
    state.push(&window[0]);
    assert_eq!(state.admits(&window[1]), Err(v));
}

/// Asserts that the whole `window` is one group.
fn assert_fused(window: &[diffuse_ir::IndexTask]) {
    assert_eq!(longest_fusible_prefix(window), (window.len(), None));
    assert_eq!(analyse(window).groups.len(), 1);
}

/// Asserts that the pair of tasks `pair(q)` splits, stopped by `v`, and that the control
/// `pair(p)`, the same pair through `p` where it used `q`, fuses.
fn assert_split_through_q(
    pair: impl Fn(&Partition) -> [diffuse_ir::IndexTask; 2],
    p: &Partition,
    q: &Partition,
    v: Violation,
) {
    assert_split(&pair(q), v);
    assert_fused(&pair(p));
}

#[test]
fn launch_domains_differ() {
    let ([a, b, ..], p, _) = setup();
    let p2 = blocked(&b, &[2]);
    let split = [task(&L, &[(&a, &p, W)]), task(&[2], &[(&b, &p2, W)])];
    assert_split(&split, Violation::LaunchDomain);
    let fused = [task(&L, &[(&a, &p, W)]), task(&L, &[(&b, &p, W)])];
    assert_fused(&fused);
}

#[test]
fn launch_domain_is_checked_even_without_shared_stores() {
    // Same number of points, different shape: still different launch domains.
    let ([a, b, ..], p, _) = setup();
    let q = Partition::replicate();
    let split = [task(&L, &[(&a, &p, R)]), task(&[2, 2], &[(&b, &q, R)])];
    assert_split(&split, Violation::LaunchDomain);
}

#[test]
fn write_through_p_then_read_through_p_prime() {
    let ([a, b, c, _], p, q) = setup();
    let pair = |x: &Partition| {
        [
            task(&L, &[(&b, &p, R), (&a, &p, W)]),
            task(&L, &[(&a, x, R), (&c, &p, W)]),
        ]
    };
    assert_split_through_q(pair, &p, &q, Violation::TrueDependence(a.id()));
}

#[test]
fn write_through_p_then_write_or_read_write_through_p_prime() {
    let ([a, ..], p, q) = setup();
    for second in [W, RW] {
        let pair = |x: &Partition| [task(&L, &[(&a, &p, W)]), task(&L, &[(&a, x, second)])];
        assert_split_through_q(pair, &p, &q, Violation::TrueDependence(a.id()));
    }
}

#[test]
fn read_through_p_then_write_through_p_prime() {
    let ([a, b, c, _], p, q) = setup();
    let pair = |x: &Partition| {
        [
            task(&L, &[(&a, &p, R), (&b, &p, W)]),
            task(&L, &[(&c, &p, R), (&a, x, W)]),
        ]
    };
    assert_split_through_q(pair, &p, &q, Violation::AntiDependence(a.id()));
}

#[test]
fn reduce_then_read_or_write() {
    let ([a, b, c, _], p, _) = setup();
    for second in [R, W, RW] {
        // Even through the very partition the reduction went through.
        let split = [
            task(&L, &[(&b, &p, R), (&a, &p, SUM)]),
            task(&L, &[(&a, &p, second), (&c, &p, W)]),
        ];
        assert_split(&split, Violation::Reduction(a.id()));
    }
    let fused = [
        task(&L, &[(&b, &p, R), (&a, &p, SUM)]),
        task(&L, &[(&b, &p, R), (&c, &p, W)]),
    ];
    assert_fused(&fused);
}

#[test]
fn read_or_write_then_reduce() {
    let ([a, b, c, _], p, _) = setup();
    let r = Partition::replicate();
    for first in [R, W, RW] {
        // The second task reduces `reduced` through `x`.
        let pair = |reduced: &Store, x: &Partition| {
            [
                task(&L, &[(&a, &p, first)]),
                task(&L, &[(&b, &p, R), (reduced, x, SUM)]),
            ]
        };
        assert_split(&pair(&a, &r), Violation::Reduction(a.id()));
        assert_split(&pair(&a, &p), Violation::Reduction(a.id()));
        // Control: the same pair reducing another store fuses.
        assert_fused(&pair(&c, &r));
    }
}

#[test]
fn reduce_then_reduce_the_same_store_is_fusible() {
    let ([a, b, ..], p, q) = setup();
    let r = Partition::replicate();
    let window = [
        task(&L, &[(&b, &p, R), (&a, &r, SUM)]),
        task(&L, &[(&b, &p, R), (&a, &r, SUM)]),
        // Through another partition as well: contributions with one operator commute.
        task(&L, &[(&b, &q, R), (&a, &p, SUM)]),
    ];
    assert_fused(&window);
}

/// Successive reductions with different operators do not commute (`(s + x) * y` is not
/// `s * y + x`), and the paper (§4.1) counts a dependence unless both reduce "with the same
/// associative and commutative operator"; the IR rejects such a pair inside one task
/// (`InterferingArgs`). Fusing them is therefore not allowed.
#[test]
fn reductions_with_different_operators_are_not_fusible() {
    let ([a, b, ..], p, _) = setup();
    let r = Partition::replicate();
    // A sum, then a reduction by `second`.
    let pair = |second| {
        [
            task(&L, &[(&b, &p, R), (&a, &r, SUM)]),
            task(&L, &[(&b, &p, R), (&a, &r, second)]),
        ]
    };
    assert_split(&pair(PROD), Violation::Reduction(a.id()));
    // Control: the same operator.
    assert_fused(&pair(SUM));
}

#[test]
fn reading_one_store_through_two_partitions_fuses_until_a_write() {
    let ([a, b, c, d], p, q) = setup();
    let r = Partition::replicate();
    let reads = [
        task(&L, &[(&a, &p, R), (&b, &p, W)]),
        task(&L, &[(&a, &q, R), (&c, &p, W)]),
        task(&L, &[(&a, &r, R), (&b, &p, R), (&d, &p, W)]),
    ];
    assert_fused(&reads);
    // A write through any one of the read partitions now needs the other reads to finish.
    for write in [&p, &q, &r] {
        let mut window = reads.to_vec();
        window.push(task(&L, &[(&a, write, W)]));
        assert_eq!(
            longest_fusible_prefix(&window),
            (3, Some(Violation::AntiDependence(a.id())))
        );
    }
    // With a single read partition, writing through it fuses.
    let one = [
        task(&L, &[(&a, &p, R), (&b, &p, W)]),
        task(&L, &[(&a, &p, R), (&c, &p, W)]),
        task(&L, &[(&a, &p, W)]),
    ];
    assert_fused(&one);
}

#[test]
fn write_then_read_through_the_same_partition_keeps_fusing() {
    let ([a, b, c, _], p, _) = setup();
    let window = [
        task(&L, &[(&a, &p, W)]),
        task(&L, &[(&a, &p, R), (&b, &p, W)]),
        task(&L, &[(&a, &p, RW), (&b, &p, R)]),
        task(&L, &[(&a, &p, R), (&b, &p, R), (&c, &p, W)]),
    ];
    assert_fused(&window);
}

#[test]
fn prefix_state_admits_without_changing_the_prefix() {
    let ([a, ..], p, q) = setup();
    let first = task(&L, &[(&a, &p, W)]);
    let bad = task(&L, &[(&a, &q, R)]);
    let good = task(&L, &[(&a, &p, R)]);
    let mut state = PrefixState::new();
    assert!(state.is_empty());
    assert_eq!(
        state.admits(&bad),
        Ok(()),
        "an empty prefix admits anything"
    );
    state.push(&first);
    assert_eq!(state.len(), 1);
    for _ in 0..2 {
        assert_eq!(state.admits(&bad), Err(Violation::TrueDependence(a.id())));
        assert_eq!(state.admits(&good), Ok(()));
    }
    assert_eq!(state.len(), 1);
    state.push(&good);
    assert_eq!(state.len(), 2);
    assert!(!state.is_empty());
}

#[test]
fn empty_window_has_no_groups() {
    assert_eq!(longest_fusible_prefix(&[]), (0, None));
    assert!(analyse(&[]).groups.is_empty());
}
