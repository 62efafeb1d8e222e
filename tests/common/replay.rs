//! The differential property of recorded task streams replayed over other stores
//! (`Context::start_recording`, `finish_recording`, `replay`): the random streams of the
//! fusion property ([`super::streams`]) are recorded while they run fused, then replayed twice
//! over fresh stores holding other data, and every store the stream holds to its end must equal
//! the sequential model run on that data (bitwise; within a tolerance where Legion folds
//! reductions). Streams that read or write host data in the middle must be refused with the
//! reason; they are checked again without those steps.

use std::cell::Cell;

use diffuse_ir::{Context, IrError, Recording, Store, View};
use proptest::test_runner::TestCaseError;

use super::fusion::*;
use super::streams::*;

/// `plan` without its host reads and writes (handles those steps dropped are dropped at the
/// step before, or before the first step), and with each store's data replaced by
/// `data(store index, values)`.
fn variant(plan: &Plan, data: impl Fn(usize, &[f64]) -> Vec<f64>) -> Plan {
    let mut steps = Vec::new();
    let mut drop_first = plan.drop_first.clone();
    let mut drop_after: Vec<Vec<usize>> = Vec::new();
    for (step, drops) in plan.steps.iter().zip(&plan.drop_after) {
        match step {
            Step::Task(_) | Step::Flush => {
                steps.push(step.clone());
                drop_after.push(drops.clone());
            }
            Step::Read(_) | Step::Write(..) => match drop_after.last_mut() {
                Some(last) => last.extend(drops),
                None => drop_first.extend(drops),
            },
        }
    }
    Plan {
        stores: plan
            .stores
            .iter()
            .enumerate()
            .map(|(i, s)| StoreSpec {
                shape: s.shape.clone(),
                data: s.data.as_deref().map(|d| data(i, d)),
                keep: s.keep,
            })
            .collect(),
        steps,
        drop_first,
        drop_after,
        window: plan.window,
        strip_bytes: plan.strip_bytes,
        procs: plan.procs,
    }
}

/// The stores holding data at the start that the stream uses: the recording's inputs.
fn inputs(plan: &Plan) -> Vec<usize> {
    (0..plan.stores.len())
        .filter(|s| plan.stores[*s].data.is_some() && !plan.drop_first.contains(s))
        .collect()
}

/// Handles of `plan`'s stores holding data (made outside any recording).
fn data_stores(c: &Context, plan: &Plan) -> Vec<Option<Store>> {
    plan.stores
        .iter()
        .map(|s| {
            s.data
                .as_ref()
                .map(|d| c.store_from_vec(&s.shape, d.clone()).unwrap())
        })
        .collect()
}

/// Runs `plan`'s steps on `c` as `run_real` does, recording them with its data stores as
/// inputs; returns the recording (or why it was refused) and which stores the stream held to
/// its end, in the order of the recording's outputs.
fn record(c: &Context, plan: &Plan) -> (Result<Recording, IrError>, Vec<usize>) {
    let mut handles = data_stores(c, plan);
    for &s in &plan.drop_first {
        handles[s] = None;
    }
    let views: Vec<View> = inputs(plan)
        .iter()
        .map(|&s| handles[s].as_ref().expect("an input").view())
        .collect();
    c.start_recording(&views)
        .expect("no other recording is open");
    drop(views);
    for (i, step) in plan.steps.iter().enumerate() {
        match step {
            Step::Task(t) => {
                if let Some(s) = t.creates {
                    handles[s] = Some(whole(c, &plan.stores[s].shape));
                }
                c.submit(build_task(&handles, t)).expect("submit");
            }
            Step::Flush => c.flush_window().expect("flush"),
            Step::Read(o) => drop(c.read::<f64>(&view_of(&handles, o)).expect("read")),
            Step::Write(o, data) => c.write(&view_of(&handles, o), data.clone()).expect("write"),
        }
        for &s in &plan.drop_after[i] {
            handles[s] = None;
        }
    }
    let held: Vec<usize> = (0..handles.len())
        .filter(|&s| handles[s].is_some() && plan.stores[s].keep)
        .collect();
    let outputs: Vec<View> = held
        .iter()
        .map(|&s| handles[s].as_ref().expect("held").view())
        .collect();
    (c.finish_recording(&outputs), held)
}

#[derive(Default)]
struct Counts {
    replayed: Cell<usize>,
    refused: Cell<usize>,
    tasks: Cell<usize>,
}

fn check(raw: &RawCase, counts: &Counts, on: On) -> Result<(), TestCaseError> {
    let original = plan(raw);
    let r = rig_on(
        &original,
        fused(original.window),
        original.strip_bytes,
        None,
        on,
    );
    let c = &r.ctx;
    // Bitwise, except where Legion folds reductions in an order of its own (as in the fusion
    // property).
    let reassociated = on == On::Legion && original.reduces() && !legion_folds(&original);
    let has_host_steps = original
        .steps
        .iter()
        .any(|s| matches!(s, Step::Read(_) | Step::Write(..)));
    let (recording, _) = record(c, &original);
    if has_host_steps {
        // A value read back may steer the code that built the stream; host data differs
        // from run to run: neither replays.
        match recording {
            Err(IrError::NotReplayable { reason }) => {
                assert!(reason.contains("read back") || reason.contains("host data"));
                counts.refused.set(counts.refused.get() + 1);
            }
            other => panic!("a stream with host steps recorded: {other:?}"),
        }
    }
    let plan = variant(&original, |_, d| d.to_vec());
    let (recording, held) = record(c, &plan);
    let recording = recording.map_err(|e| TestCaseError::fail(format!("refused: {e}")))?;
    c.flush_window().expect("flush");
    for round in 1..=2 {
        // Other data: what a replay computes must come from its inputs, not the recording's.
        let other = variant(&plan, |s, d| {
            d.iter()
                .enumerate()
                .map(|(k, v)| v * 0.5 - 0.25 * round as f64 + ((s + k) % 3) as f64)
                .collect()
        });
        let expected = run_model(&other);
        let stores = data_stores(c, &other);
        let views: Vec<View> = inputs(&other)
            .iter()
            .map(|&s| stores[s].as_ref().expect("an input").view())
            .collect();
        drop(stores);
        let outputs = c
            .replay(&recording, &views)
            .map_err(|e| TestCaseError::fail(format!("replay {round}: {e}")))?;
        drop(views);
        for (view, &s) in outputs.iter().zip(&held) {
            let got = c.read::<f64>(view).expect("read");
            let want = expected.finals[s].as_ref().expect("a held store");
            let same = if reassociated {
                close(&got, want)
            } else {
                bits(&got) == bits(want)
            };
            if !same {
                return Err(TestCaseError::fail(format!(
                    "replay {round}: store {s}: {got:?}, model {want:?}"
                )));
            }
        }
    }
    counts.replayed.set(counts.replayed.get() + 1);
    counts.tasks.set(counts.tasks.get() + recording.tasks());
    Ok(())
}

/// Records `cases` random streams on `on` and replays each twice over other data; fails
/// unless every replay matches the sequential model and enough streams were refused for
/// their host steps.
pub(crate) fn run_replay_property(cases: u32, on: On) {
    let counts = Counts::default();
    if let Err(e) = property_runner(cases).run(&raw_case(), |raw| check(&raw, &counts, on)) {
        panic!("{e}");
    }
    let (replayed, refused) = (counts.replayed.get(), counts.refused.get());
    eprintln!(
        "replay property: {replayed} streams replayed ({} tasks recorded), {refused} with host \
         steps refused",
        counts.tasks.get()
    );
    assert!(replayed >= cases as usize);
    assert!(refused * 10 >= replayed, "too few streams with host steps");
}
