//! Recorded task streams replayed over other stores, on the embedded backend and its simulated
//! GPU: the differential property of `common::replay` (400 and 40 random streams by default;
//! `DIFFUSE_REPLAY_CASES` and `DIFFUSE_SIM_GPU_CASES` set other counts), and a replay's checks of its inputs and a
//! recording's refusals.

use diffuse_ir::{Context, IrError, Shape, Store, Tuple, View};

use crate::common::fusion::*;
use crate::common::replay::run_replay_property;
use crate::common::streams::{cases_from_env, On};

/// Recorded random streams replayed over other data match the sequential model.
#[test]
fn replayed_streams_match_the_sequential_model() {
    run_replay_property(cases_from_env("DIFFUSE_REPLAY_CASES", 400), On::Embedded);
}

/// The same on the simulated GPU, each task placed on it or on the CPUs at random.
#[test]
fn replayed_streams_match_the_sequential_model_on_the_simulated_gpu() {
    // (A case takes about 0.6 s here: the simulated device's launches.)
    run_replay_property(cases_from_env("DIFFUSE_SIM_GPU_CASES", 40), On::SimGpu);
}

fn f64_store(c: &Context, shape: &[i64], values: impl Fn(usize) -> f64) -> Store {
    let n = shape.iter().product::<i64>() as usize;
    c.store_from_vec(shape, (0..n).map(values).collect())
        .expect("store")
}

/// `out = a + b` over whole stores (one launch point).
fn add(c: &Context, out: &Store, a: &Store, b: &Store) {
    let launch: Shape = Tuple::shape(&[1]).unwrap();
    let task = diffuse_ir::IndexTask::new(&crate::common::add_kind(), launch)
        .arg(
            out,
            out.view().blocked(launch).unwrap(),
            diffuse_ir::Privilege::Write,
        )
        .arg(
            a,
            a.view().blocked(launch).unwrap(),
            diffuse_ir::Privilege::Read,
        )
        .arg(
            b,
            b.view().blocked(launch).unwrap(),
            diffuse_ir::Privilege::Read,
        );
    c.submit(task).expect("submit");
}

/// A replay refuses inputs unlike the recorded ones, naming the input and how it differs.
#[test]
fn replay_refuses_inputs_unlike_the_recorded_ones() {
    let r = rig(1, fused(None), None, None);
    let c = &r.ctx;
    let (a, b, k) = (
        f64_store(c, &[8], |i| i as f64),
        f64_store(c, &[8], |i| 1.0 + i as f64),
        f64_store(c, &[8], |_| 5.0),
    );
    c.start_recording(&[a.view(), b.view()]).unwrap();
    let out = whole(c, &[8]);
    add(c, &out, &a, &k);
    let t = whole(c, &[8]);
    add(c, &t, &out, &b);
    drop(out); // (a temporary: kept, it would refuse the recording)
    let recording = c.finish_recording(&[t.view()]).unwrap();
    assert_eq!(recording.tasks(), 2);
    assert!(recording.changed_inputs().is_empty());

    let mismatch = |inputs: &[View]| match c.replay(&recording, inputs) {
        Err(IrError::ReplayMismatch { reason }) => reason,
        other => panic!("replayed {other:?}"),
    };
    let (x, y) = (
        f64_store(c, &[8], |i| 2.0 * i as f64),
        f64_store(c, &[8], |_| 3.0),
    );
    assert!(mismatch(&[x.view()]).contains("1 inputs given, 2 recorded"));
    let longer = f64_store(c, &[9], |_| 0.0);
    assert!(mismatch(&[x.view(), longer.view()]).contains("input 1"));
    // The same store twice where the recording had two.
    assert!(mismatch(&[x.view(), x.view()]).contains("input 1"));
    // A store the recorded tasks use on their own as an input.
    let held = mismatch(&[x.view(), k.view()]);
    assert!(held.contains("use as a store of their own"), "{held}");

    // Replays compute from their inputs and the held store: (x + 5) + y.
    let got = c.replay(&recording, &[x.view(), y.view()]).unwrap();
    let values = c.read::<f64>(&got[0]).unwrap();
    let want: Vec<f64> = (0..8).map(|i| 2.0 * i as f64 + 5.0 + 3.0).collect();
    assert_eq!(values, want);
}

/// A runtime and a store of 4 values (0, 1, 2, 3), a recording open with it as the input.
fn recording_over_four() -> (Rig, Store) {
    let r = rig(1, fused(None), None, None);
    let a = f64_store(&r.ctx, &[4], |i| i as f64);
    r.ctx.start_recording(&[a.view()]).unwrap();
    (r, a)
}

/// Why the open recording, finished with `outputs`, is refused (it must be).
fn refusal(c: &Context, outputs: &[View]) -> String {
    match c.finish_recording(outputs) {
        Err(IrError::NotReplayable { reason }) => reason,
        other => panic!("not refused: {other:?}"),
    }
}

/// What a replay would not repeat refuses the recording, with its reason; a recording that
/// is already open refuses another.
#[test]
fn recordings_of_host_data_are_refused() {
    let (r, a) = recording_over_four();
    let c = &r.ctx;
    assert!(c.start_recording(&[]).is_err());
    let _made = f64_store(c, &[4], |_| 1.0);
    assert!(refusal(c, &[]).contains("host data"));
    c.start_recording(&[a.view()]).unwrap();
    c.refuse_replay(|| "a counter of the library's".into());
    assert!(refusal(c, &[]).contains("counter"));
    assert!(refusal(c, &[]).contains("no recording is open"));
}

/// What runs `unrecorded` is not part of the recording: a store made there from host data
/// is held (the same on every replay), not refused.
#[test]
fn unrecorded_work_is_held_by_replays() {
    let (r, a) = recording_over_four();
    let c = &r.ctx;
    let k = c.unrecorded(|| f64_store(c, &[4], |_| 10.0));
    assert!(c.is_recording());
    let out = whole(c, &[4]);
    add(c, &out, &a, &k);
    let recording = c.finish_recording(&[out.view()]).unwrap();
    assert_eq!(recording.tasks(), 1);
    let x = f64_store(c, &[4], |i| 2.0 * i as f64);
    let got = c.replay(&recording, &[x.view()]).unwrap();
    assert_eq!(
        c.read::<f64>(&got[0]).unwrap(),
        vec![10.0, 12.0, 14.0, 16.0]
    );
}

/// A store made while recording that is still held when it ends but is not an output was
/// kept somewhere a replay's fresh store would not reach: the recording is refused.
#[test]
fn a_store_made_and_kept_but_not_an_output_refuses_the_recording() {
    let (r, a) = recording_over_four();
    let c = &r.ctx;
    let kept = whole(c, &[4]);
    add(c, &kept, &a, &a);
    let out = whole(c, &[4]);
    add(c, &out, &kept, &a);
    assert!(refusal(c, &[out.view()]).contains("outlives"));
}
