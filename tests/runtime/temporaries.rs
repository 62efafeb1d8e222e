//! Temporaries of fused tasks: the Figure 8 program fuses three tasks of which exactly `z` is
//! temporary, and reductions of a temporary inside a fused task fold in point order, natively
//! and compiled.

use std::sync::Arc;

use crate::common::fusion::*;
use crate::common::submit_blocked;
use crate::common::view_at;
use diffuse::FusionConfig;
use diffuse_ir::{IndexTask, Partition, Privilege, ReductionOp, Store, StoreId, Tuple};
use diffuse_jit::Jit;

use crate::common::{add_kind, reduce_all_kind};

// ---------------------------------------------------------------------------------------------
// Figure 8: distributed temporaries.
// ---------------------------------------------------------------------------------------------

struct Figure8 {
    v: Vec<f64>,
    norm: f64,
    peak: usize,
    executed: Vec<String>,
    tasks_executed: u64,
    temporaries: Vec<StoreId>,
    z: StoreId,
}

/// Figure 8(a): `x, y` live; `z = 2x; w = y + z; v = w * w; norm = sum(w[n/2:])`; then
/// `del x, y, z, w` and `flush_window()`; `v` and `norm` are kept.
fn figure8(fusion: FusionConfig) -> Figure8 {
    let n = 16i64;
    let r = recording_rig(2, fusion, None, None);
    let c = &r.ctx;
    let launch = Tuple::shape(&[4]).unwrap();
    let (x, y) = (random_vector(c, n, 8), random_vector(c, n, 9));
    let norm = c.store_from_vec(&[], vec![0.0f64]).unwrap();
    c.flush_window().unwrap();
    r.backend.reset_peak_memory();
    let part = |s: &Store| s.view().blocked(launch).unwrap();
    let (z, w, v) = (whole(c, &[n]), whole(c, &[n]), whole(c, &[n]));
    let upper = view_at(&w, &[n / 2], &[n / 2]);
    let tasks = vec![
        IndexTask::new(&ew_scale_kind(), launch)
            .arg(&z, part(&z), Privilege::Write)
            .arg(&x, part(&x), Privilege::Read)
            .scalar(2.0),
        IndexTask::new(&ew_add_kind(), launch)
            .arg(&w, part(&w), Privilege::Write)
            .arg(&y, part(&y), Privilege::Read)
            .arg(&z, part(&z), Privilege::Read),
        IndexTask::new(&ew_mul_kind(), launch)
            .arg(&v, part(&v), Privilege::Write)
            .arg(&w, part(&w), Privilege::Read)
            .arg(&w, part(&w), Privilege::Read),
        IndexTask::new(&reduce_all_kind(ReductionOp::Sum), launch)
            .arg(&w, upper.blocked(launch).unwrap(), Privilege::Read)
            .arg(
                &norm,
                Partition::replicate(),
                Privilege::Reduce(ReductionOp::Sum),
            ),
    ];
    for t in &tasks {
        c.submit(t.clone()).unwrap();
    }
    let z_id = z.id();
    drop((x, y, z, w, upper));
    // What the planner decides for this window now that the handles are gone.
    let plan = diffuse_fusion::analyse(&tasks, &diffuse_fusion::HeldStores::of(&tasks));
    let temporaries = plan.groups.first().map(|g| g.temporaries.clone());
    drop(tasks);
    c.flush_window().unwrap();
    Figure8 {
        v: c.read::<f64>(&v.view()).unwrap(),
        norm: c.read_scalar::<f64>(&norm.view()).unwrap(),
        peak: r.backend.stats().peak_store_bytes as usize,
        executed: r.take_executed(),
        tasks_executed: r.backend.stats().tasks_executed,
        temporaries: temporaries.unwrap_or_default(),
        z: z_id,
    }
}

#[test]
fn figure8_fuses_three_tasks_and_only_z_is_temporary() {
    let off = figure8(FusionConfig::off());
    assert_eq!(off.tasks_executed, 4);
    // The sequential model.
    let n = 16usize;
    let (x, y) = (random_data(n, 8), random_data(n, 9));
    let w: Vec<f64> = x.iter().zip(&y).map(|(x, y)| y + 2.0 * x).collect();
    let v: Vec<f64> = w.iter().map(|w| w * w).collect();
    let norm = w[n / 2..]
        .chunks(2)
        .map(|b| b.iter().fold(-0.0, |a, x| a + x))
        .fold(0.0, |a, p| a + p);
    assert_eq!(bits(&off.v), bits(&v));
    assert_eq!(off.norm.to_bits(), norm.to_bits());

    for window in [Some(5), Some(8), None] {
        let on = figure8(fused(window));
        let fused_name = format!(
            "{}+{}+{} (temporaries: 1)",
            ew_scale_kind().name(),
            ew_add_kind().name(),
            ew_mul_kind().name()
        );
        assert_eq!(
            on.executed,
            vec![
                fused_name,
                reduce_all_kind(ReductionOp::Sum).name().to_string()
            ],
            "window {window:?}"
        );
        assert_eq!(on.tasks_executed, 2);
        assert_eq!(
            on.temporaries,
            vec![on.z],
            "temporaries of the fused prefix"
        );
        assert_eq!(bits(&on.v), bits(&off.v), "window {window:?}: v");
        assert_eq!(on.norm.to_bits(), off.norm.to_bits(), "window {window:?}");
        // z is never allocated: fusion on peaks exactly one n-vector below fusion off, where
        // x, y, z, w and v are live at once.
        assert_eq!(
            on.peak + n * 8,
            off.peak,
            "window {window:?}: peak on {} vs off {}",
            on.peak,
            off.peak
        );
    }
}

// ---------------------------------------------------------------------------------------------
// A reduction of a temporary inside a fused task.
// ---------------------------------------------------------------------------------------------

/// Values spanning ~30 orders of magnitude: their f64 sum depends on the order of additions.
fn wild(k: usize) -> f64 {
    (((k * 7919) % 13) as f64 - 6.0) * 10f64.powi((k * 31 % 33) as i32 - 16)
}

/// `t = a + b` (fresh, dropped), `acc += sum(t)` (through `t`'s own partition, so it fuses
/// with the producer and `t` is a temporary), `acc += sum(c)`: the fused task must fold its
/// constituents' contributions constituent by constituent, points in order, exactly as the
/// unfused tasks do, natively and compiled; with this data, interleaving the two reductions
/// point by point, or folding both into one accumulator per point, gives other bits.
#[test]
fn reductions_of_a_temporary_fold_in_point_order() {
    let n = 48usize;
    let a: Vec<f64> = (0..n).map(wild).collect();
    let b = random_data(n, 77);
    let cv: Vec<f64> = (0..n).map(|k| wild(k + 2)).collect();
    let run = |fusion: FusionConfig, jit: Option<Arc<Jit>>| {
        let r = recording_rig(3, fusion, None, jit);
        let c = &r.ctx;
        let launch = Tuple::shape(&[6]).unwrap();
        let xa = c.store_from_vec(&[n as i64], a.clone()).unwrap();
        let xb = c.store_from_vec(&[n as i64], b.clone()).unwrap();
        let xc = c.store_from_vec(&[n as i64], cv.clone()).unwrap();
        let acc = c.store_from_vec(&[], vec![0.125f64]).unwrap();
        let t = whole(c, &[n as i64]);
        let part = |s: &Store| s.view().blocked(launch).unwrap();
        submit_blocked(c, &add_kind(), launch, &t, &xa, &xb).unwrap();
        for input in [&t, &xc] {
            c.submit(
                IndexTask::new(&reduce_all_kind(ReductionOp::Sum), launch)
                    .arg(input, part(input), Privilege::Read)
                    .arg(
                        &acc,
                        Partition::replicate(),
                        Privilege::Reduce(ReductionOp::Sum),
                    ),
            )
            .unwrap();
        }
        drop(t);
        c.flush_window().unwrap();
        let log: Vec<String> = r.take_executed();
        (
            c.read_scalar::<f64>(&acc.view()).unwrap(),
            log,
            r.backend.stats().compiled_points,
        )
    };
    // Per-point partial sums (blocks of 8, each folded from the identity -0.0).
    let partials = |v: &[f64]| -> Vec<f64> {
        v.chunks(8)
            .map(|blk| blk.iter().fold(-0.0, |s, x| s + x))
            .collect()
    };
    let t: Vec<f64> = a.iter().zip(&b).map(|(a, b)| a + b).collect();
    let (pt, pc) = (partials(&t), partials(&cv));
    let want = pc
        .iter()
        .fold(pt.iter().fold(0.125, |s, p| s + p), |s, p| s + p);
    let interleaved = pt.iter().zip(&pc).fold(0.125, |s, (p, q)| s + p + q);
    assert_ne!(
        want.to_bits(),
        interleaved.to_bits(),
        "data not order-sensitive"
    );
    // One accumulator per point for both reductions: each point folds its `t` block, then
    // its `c` block.
    let shared = t
        .chunks(8)
        .zip(cv.chunks(8))
        .map(|(bt, bc)| bt.iter().chain(bc).fold(-0.0, |s, x| s + x))
        .fold(0.125, |s, p| s + p);
    assert_ne!(want.to_bits(), shared.to_bits(), "data not order-sensitive");
    let (off, _, _) = run(FusionConfig::off(), None);
    assert_eq!(
        off.to_bits(),
        want.to_bits(),
        "fusion off: {off:e} vs {want:e}"
    );
    for (what, jit) in native_and_jit() {
        let compiles = jit.is_some();
        let (on, log, compiled) = run(fused(Some(8)), jit);
        assert_eq!(
            log,
            vec![format!(
                "{}+{}+{} (temporaries: 1)",
                add_kind().name(),
                reduce_all_kind(ReductionOp::Sum).name(),
                reduce_all_kind(ReductionOp::Sum).name()
            )],
            "{what}"
        );
        assert_eq!(compiled, if compiles { 6 } else { 0 }, "{what}");
        assert_eq!(
            on.to_bits(),
            want.to_bits(),
            "fusion on, {what}: {on:e} vs {want:e}"
        );
    }
}
