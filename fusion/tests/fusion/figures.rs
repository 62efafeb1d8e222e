//! The paper's worked examples: the 5-point stencil of Figure 2 (one iteration, then two in
//! one window), the distributed temporaries of Figure 8, and the isomorphic and differing
//! task streams of Figure 10.

use crate::common::longest_fusible_prefix;

use crate::fused::signature;
use diffuse_fusion::{Group, Planner, Violation};
use diffuse_ir::{validate, Context, DType, IndexTask, Partition, Store, StoreId};

use crate::common::{
    analyse, blocked, canonicalize, ctx, group, kind, plan_now, sh, store, temporaries,
    view_blocked, R, SUM, W,
};

/// One iteration of Figure 2(c) over `grid` ((n+2) x (n+2)), and its fresh stores.
pub struct Iteration {
    pub tasks: Vec<IndexTask>,
    pub t1: StoreId,
    pub t2: StoreId,
    pub t3: StoreId,
    pub avg: StoreId,
    pub work: StoreId,
    /// The five views' partitions: center, north, east, west, south.
    pub views: [Partition; 5],
}

impl Iteration {
    /// The four temporaries of a fused iteration: `t1`, `t2`, `t3` and `avg`.
    pub fn temporaries(&self) -> [StoreId; 4] {
        [self.t1, self.t2, self.t3, self.avg]
    }

    /// The group of the iteration's first five tasks, issued from `first` on, with its four
    /// temporaries: the copy back into `grid` stops it.
    pub fn fused_group(&self, first: usize, grid: StoreId) -> Group {
        group(
            first..first + 5,
            &self.temporaries(),
            Some(Violation::AntiDependence(grid)),
        )
    }
}

/// Builds `t1 = center + north; t2 = t1 + east; t3 = t2 + west; avg = t3 + south;
/// work = 0.2 * avg; center[:] = work` over an `n x n` block of `launch`. Every task is
/// checked as `Context::submit` would; then the application's handles to the fresh stores
/// (and to the views) are dropped, as the Python program drops its temporaries.
pub fn stencil_iteration(c: &Context, grid: &Store, n: i64, launch: &[i64]) -> Iteration {
    let view = |offset: [i64; 2]| view_blocked(grid, &offset, &[n, n], launch);
    let views = [
        view([1, 1]),
        view([0, 1]),
        view([1, 2]),
        view([1, 0]),
        view([2, 1]),
    ];
    let [center, north, east, west, south] = views.clone();
    let add = kind("fig2::ADD", &[R, R, W], &[]);
    let mult = kind("fig2::MULT", &[R, W], &[DType::F64]);
    let copy = kind("fig2::COPY", &[R, W], &[]);
    let (t1, t2, t3) = (store(c, &[n, n]), store(c, &[n, n]), store(c, &[n, n]));
    let (avg, work) = (store(c, &[n, n]), store(c, &[n, n]));
    // All n x n stores share one (interned) blocked tiling.
    let p = blocked(&t1, launch);
    let l = sh(launch);
    let add_task = |a: (&Store, &Partition), b: (&Store, &Partition), out: &Store| {
        IndexTask::new(&add, l)
            .arg(a.0, a.1.clone(), R)
            .arg(b.0, b.1.clone(), R)
            .arg(out, p.clone(), W)
    };
    let tasks = vec![
        add_task((grid, &center), (grid, &north), &t1),
        add_task((&t1, &p), (grid, &east), &t2),
        add_task((&t2, &p), (grid, &west), &t3),
        add_task((&t3, &p), (grid, &south), &avg),
        IndexTask::new(&mult, l)
            .arg(&avg, p.clone(), R)
            .arg(&work, p.clone(), W)
            .scalar(0.2),
        IndexTask::new(&copy, l)
            .arg(&work, p.clone(), R)
            .arg(grid, center.clone(), W),
    ];
    for t in &tasks {
        validate(t).expect("Figure 2's tasks are valid IR");
    }
    Iteration {
        t1: t1.id(),
        t2: t2.id(),
        t3: t3.id(),
        avg: avg.id(),
        work: work.id(),
        tasks,
        views,
    }
    // t1, t2, t3, avg and work (application handles) are dropped here.
}

#[test]
fn figure2_one_iteration_fuses_the_scaled_five_way_add_but_not_the_copy() {
    let c = ctx();
    let n = 8;
    let grid = store(&c, &[n + 2, n + 2]);
    let it = stencil_iteration(&c, &grid, n, &[2, 2]);
    // The views are five distinct partitions of one store.
    for (i, a) in it.views.iter().enumerate() {
        for b in &it.views[i + 1..] {
            assert_ne!(a, b);
        }
    }
    // Only task references remain to the fresh stores; grid is still held.
    for (t, a) in [(0, 2), (1, 2), (2, 2), (3, 2), (4, 1)] {
        assert_eq!(it.tasks[t].args()[a].store.app_handles(), 0);
    }
    assert_eq!(grid.app_handles(), 1);

    let plan = analyse(&it.tasks);
    assert!(!plan.memoized);
    assert_eq!(
        plan.groups,
        vec![
            it.fused_group(0, grid.id()),
            // The COPY reads `work` before writing anything: nothing is temporary.
            group(5..6, &[], None),
        ]
    );
    assert_eq!(
        longest_fusible_prefix(&it.tasks),
        (5, Some(Violation::AntiDependence(grid.id())))
    );
    // `work` is not temporary only because the pending COPY reads it: without the COPY in
    // the window it would be.
    assert!(!temporaries(&it.tasks, 5).contains(&it.work));
    assert_eq!(
        temporaries(&it.tasks[..5], 5),
        vec![it.t1, it.t2, it.t3, it.avg, it.work]
    );

    // The fused task is Figure 2(f): the five views of grid read, work written.
    let sig = signature(&it.tasks[..5], &plan.groups[0].temporaries);
    let [center, north, east, west, south] = it.views.clone();
    let p = it.tasks[4].args()[1].partition.clone();
    assert_eq!(
        sig,
        vec![
            (grid.id(), center, R),
            (grid.id(), north, R),
            (grid.id(), east, R),
            (grid.id(), west, R),
            (grid.id(), south, R),
            (it.work, p, W),
        ]
    );
}

/// Two iterations in one window. The first group is as above. The COPY of iteration 1 writes
/// grid through P_center, and the first ADD of iteration 2 reads grid through P_center (fine)
/// and P_north (a true dependence): the COPY is a group of its own, stopped by
/// `TrueDependence(grid)`. Iteration 2 then fuses like iteration 1, and its COPY is last.
#[test]
fn figure2_two_iterations_keep_each_copy_alone() {
    let c = ctx();
    let n = 8;
    let grid = store(&c, &[n + 2, n + 2]);
    let first = stencil_iteration(&c, &grid, n, &[2, 2]);
    let second = stencil_iteration(&c, &grid, n, &[2, 2]);
    let window: Vec<IndexTask> = first.tasks.iter().chain(&second.tasks).cloned().collect();
    assert_eq!(window.len(), 12);
    let g = grid.id();
    let plan = analyse(&window);
    assert_eq!(
        plan.groups,
        vec![
            first.fused_group(0, g),
            group(5..6, &[], Some(Violation::TrueDependence(g))),
            second.fused_group(6, g),
            group(11..12, &[], None),
        ]
    );
    // Both iterations' views are the same interned partitions.
    assert!(first.views.iter().zip(&second.views).all(|(a, b)| a == b));
}

/// Figure 8: `z = 2x; w = y + z; v = w ** 2; norm = ||w[n/2:]||`, then `del x, y, z, w`.
#[test]
fn figure8_only_z_is_temporary_and_norm_is_not_fused() {
    let c = ctx();
    let n = 16;
    let launch = [4];
    let (x, y) = (store(&c, &[n]), store(&c, &[n]));
    let (z, w, v) = (store(&c, &[n]), store(&c, &[n]), store(&c, &[n]));
    let norm = c.create_store(&[], DType::F64).expect("0-d store");
    let p = blocked(&x, &launch);
    let half = view_blocked(&w, &[n / 2], &[n / 2], &launch);
    assert_ne!(p, half);
    let mult = kind("fig8::MULT", &[R, W], &[DType::F64]);
    let add = kind("fig8::ADD", &[R, R, W], &[]);
    let pow = kind("fig8::POW", &[R, W], &[DType::F64]);
    let norm_k = kind("fig8::NORM", &[R, SUM], &[]);
    let l = sh(&launch);
    let tasks = vec![
        IndexTask::new(&mult, l)
            .arg(&x, p.clone(), R)
            .arg(&z, p.clone(), W)
            .scalar(2.0),
        IndexTask::new(&add, l)
            .arg(&y, p.clone(), R)
            .arg(&z, p.clone(), R)
            .arg(&w, p.clone(), W),
        IndexTask::new(&pow, l)
            .arg(&w, p.clone(), R)
            .arg(&v, p.clone(), W)
            .scalar(2.0),
        IndexTask::new(&norm_k, l)
            .arg(&w, half.clone(), R)
            .arg(&norm, Partition::replicate(), SUM),
    ];
    // The variant where NORM reads w through the partition it was written through.
    let mut same_partition = tasks[..3].to_vec();
    same_partition.push(IndexTask::new(&norm_k, l).arg(&w, p.clone(), R).arg(
        &norm,
        Partition::replicate(),
        SUM,
    ));
    for t in tasks.iter().chain(&same_partition[3..]) {
        validate(t).expect("Figure 8's tasks are valid IR");
    }
    let (x_id, y_id, z_id, w_id) = (x.id(), y.id(), z.id(), w.id());
    drop((x, y, z, w));

    let plan = analyse(&tasks);
    assert_eq!(
        plan.groups,
        vec![
            group(0..3, &[z_id], Some(Violation::TrueDependence(w_id))),
            // `w` is read first and `norm` is reduced (and held): no temporaries.
            group(3..4, &[], None),
        ]
    );
    // Why the others are not temporary: x and y are read before any write, w is read by the
    // pending NORM, v is held by the application.
    let temps = temporaries(&tasks, 3);
    for id in [x_id, y_id, w_id, v.id()] {
        assert!(!temps.contains(&id));
    }
    // Had NORM read w through the partition it was written through, it would fuse and w
    // would be temporary too (norm is reduced and held, so not).
    assert_eq!(
        analyse(&same_partition).groups,
        vec![group(0..4, &[z_id, w_id], None)]
    );
}

/// Builds the four-task streams of Figure 10(a) over three stores `s`: `T1(a R, b W)`,
/// `T2(b R, a W)`, `T3(a R, c W)` (or `T3(c R, c W)` for the differing stream),
/// `T4(c R, a W)`, all over one launch domain and one partition.
fn figure10_stream(s: [&Store; 3], differing: bool) -> Vec<IndexTask> {
    let launch = [2];
    let p = blocked(s[0], &launch);
    let l = sh(&launch);
    let t = |name: &str, read: &Store, write: &Store| {
        IndexTask::new(&kind(name, &[R, W], &[]), l)
            .arg(read, p.clone(), R)
            .arg(write, p.clone(), W)
    };
    let [a, b, c] = s;
    vec![
        t("fig10::T1", a, b),
        t("fig10::T2", b, a),
        if differing {
            t("fig10::T3", c, c)
        } else {
            t("fig10::T3", a, c)
        },
        t("fig10::T4", c, a),
    ]
}

#[test]
fn figure10_isomorphic_streams_share_a_key_and_the_differing_one_does_not() {
    let cx = ctx();
    let fresh = || [store(&cx, &[8]), store(&cx, &[8]), store(&cx, &[8])];
    let (s123, s567, other) = (fresh(), fresh(), fresh());
    let left = figure10_stream([&s123[0], &s123[1], &s123[2]], false);
    let middle = figure10_stream([&s567[0], &s567[1], &s567[2]], false);
    let right = figure10_stream([&other[0], &other[1], &other[2]], true);

    let (l, m, r) = (
        canonicalize(&left),
        canonicalize(&middle),
        canonicalize(&right),
    );
    assert_eq!(l.key, m.key);
    assert_ne!(l.key, r.key);
    let ids = |s: &[Store; 3]| s.iter().map(|x| x.id()).collect::<Vec<_>>();
    assert_eq!(l.stores, ids(&s123));
    assert_eq!(m.stores, ids(&s567));
    // The right stream names its stores in the same first-occurrence order.
    assert_eq!(r.stores, ids(&other));

    // The planner replays the left stream's decision for the middle one only.
    let mut planner = Planner::new();
    assert!(!plan_now(&mut planner, &left).memoized);
    let replayed = plan_now(&mut planner, &middle);
    assert!(replayed.memoized);
    assert_eq!(replayed.groups, analyse(&middle).groups);
    assert!(!plan_now(&mut planner, &right).memoized);
    assert_eq!(planner.stats().analysed, 2);
    assert_eq!(planner.stats().replayed, 1);
}
