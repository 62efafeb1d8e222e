//! The Legion backend against the same specification as the embedded one: the differential
//! property over random task streams (fused = unfused = the sequential model, bitwise),
//! placement by a Mapple mapper checked point by point against the mapper's own log, and
//! faults inside Legion tasks surfacing as errors at the flush.
//!
//! Legion starts once per process (it cannot restart), so every test here shares one
//! runtime of two CPU processors, started by the first.

use std::sync::Arc;

use diffuse::backend::{ProcKind, Processor};
use diffuse::{
    Backend, FusionConfig, LegionBackend, LegionConfig, MapplePlacement, Placement, Runtime,
    RuntimeConfig,
};
use diffuse_ir::{Context, DType, IrError, Privilege, Tuple};

use crate::common::faults::{launch_1d, panic_at_kind};
use crate::common::fusion::{bits, rig_over};
use crate::common::legion::{legion, points_of, regions_to_myself, streams_running};
use crate::common::run_writer;
use crate::common::streams::{cases_from_env, run_compiled_property, run_property, On};
use crate::common::submit_blocked;
use crate::common::unfused_runtime;
use crate::common::{
    add_kind, copy_kind, counting_store, name, reduce_all_kind, scale_by_store_kind, view_at,
};

#[test]
fn fused_streams_match_unfused_and_sequential_on_legion() {
    let _streams = streams_running();
    run_property(
        cases_from_env("DIFFUSE_LEGION_CASES", 400),
        None,
        On::Legion,
    );
}

#[test]
fn replayed_streams_match_the_sequential_model_on_legion() {
    let _streams = streams_running();
    crate::common::replay::run_replay_property(
        cases_from_env("DIFFUSE_LEGION_REPLAY_CASES", 100),
        On::Legion,
    );
}

#[test]
fn jit_fused_streams_match_unfused_and_sequential_on_legion() {
    let _streams = streams_running();
    run_compiled_property(cases_from_env("DIFFUSE_LEGION_JIT_CASES", 40), On::Legion);
}

/// Elements of the stores [`add_over_eight`] adds.
const ADDED: i64 = 40;

/// `a = [0, 1, 2, ...]` and `b = [0, 1, 4, ...]` of [`ADDED`] elements, and what `a + b` is.
fn addends(ctx: &Context) -> (diffuse_ir::Store, diffuse_ir::Store, Vec<f64>) {
    let a = counting_store(ctx, &[ADDED]);
    let b = ctx
        .store_from_vec(&[ADDED], (0..ADDED).map(|i| (i * i) as f64).collect())
        .unwrap();
    (a, b, (0..ADDED).map(|i| (i + i * i) as f64).collect())
}

/// A new store holding `a + b`, computed over 8 launch points.
fn add_into_new(ctx: &Context, a: &diffuse_ir::Store, b: &diffuse_ir::Store) -> diffuse_ir::Store {
    let c = ctx.create_store(&[ADDED], DType::F64).unwrap();
    submit_blocked(ctx, &add_kind(), Tuple::shape(&[8]).unwrap(), &c, a, b).unwrap();
    c
}

/// `c = a + b` over 8 launch points on 1-d stores of 40 elements (see [`addends`]), on
/// `ctx`.
pub(crate) fn add_over_eight(ctx: &Context) -> Vec<f64> {
    let (a, b, _) = addends(ctx);
    let c = add_into_new(ctx, &a, &b);
    ctx.read::<f64>(&c.view()).unwrap()
}

/// The processors a mapper log's `SLICE_TASK` lines name, point by point.
fn logged_processors(log: &[String]) -> Vec<Processor> {
    log.iter()
        .skip_while(|l| !l.starts_with("SLICE_TASK"))
        .skip(1)
        .take_while(|l| l.contains("-> node"))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let node = words[words.len() - 3].parse().unwrap();
            let index = words[words.len() - 1].parse().unwrap();
            Processor {
                kind: ProcKind::Cpu,
                node,
                index,
            }
        })
        .collect()
}

#[test]
fn points_run_on_the_processors_the_mapper_names() {
    let backend = legion(None);
    let machine = backend.machine();
    assert_eq!(
        machine.cpus(),
        2,
        "the tests' Legion runs two CPU processors"
    );
    let task = diffuse::placement::mapple_name(&name("add"));
    // Against the default blocks (points 0-3 on processor 0): odd points on processor 0.
    let source = format!(
        "m = Machine(CPU);\n\
         def swapped(Task task) {{ return m[0, (task.ipoint[0] + 1) % 2]; }}\n\
         IndexTaskMap {task} swapped;\n"
    );
    let placement = Arc::new(MapplePlacement::new("swap.mapple", &source, machine, true).unwrap());
    backend.record_points();
    let runtime = unfused_runtime(
        backend.clone(),
        Some(placement.clone() as Arc<dyn Placement>),
    );
    let ctx = Context::new(runtime);
    let got = add_over_eight(&ctx);
    let want: Vec<f64> = (0..40).map(|i| (i + i * i) as f64).collect();
    assert_eq!(got, want);
    let ran = points_of(&backend, "add");
    let logged = logged_processors(&placement.take_log());
    assert_eq!(logged.len(), 8, "the mapper logged every point");
    assert_eq!(ran.len(), 8, "every point ran once: {ran:?}");
    for (i, r) in ran.iter().enumerate() {
        assert_eq!(r.point[0], i as i64);
        assert_eq!(
            r.processor, logged[i],
            "point {i} ran on {:?}, the mapper chose {:?}",
            r.processor, logged[i]
        );
        assert_eq!(r.processor.index, (i + 1) % 2);
    }
}

#[test]
fn a_panic_inside_a_legion_task_is_an_error_at_the_flush() {
    let backend = legion(None);
    let runtime = Arc::new(Runtime::new(backend, RuntimeConfig::default()));
    let ctx = Context::new(runtime);
    let out = ctx.create_store(&[8], DType::F64).unwrap();
    let err = launch_1d(&ctx, &panic_at_kind(), &out, 4, 0b0100).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("panic_at"), "{message}");
    assert!(message.contains("at point (2"), "{message}");
    assert!(message.contains("injected panic 2"), "{message}");
    // The runtime keeps working: the next launch without a fault succeeds.
    launch_1d(&ctx, &panic_at_kind(), &out, 4, 0).unwrap();
    let values = ctx.read::<f64>(&out.view()).unwrap();
    assert_eq!(values, vec![1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0]);
}

/// The tests' Legion backend, on this machine without GPUs (what the tests that call it are
/// about), and the Mapple mapper `source` (file `file`) for its machine.
fn legion_without_gpus(file: &str, source: &str) -> (Arc<LegionBackend>, Arc<MapplePlacement>) {
    let backend = legion(None);
    let machine = backend.machine();
    assert_eq!(
        machine.gpus_per_node, 0,
        "this test is about machines without GPUs"
    );
    let placement = MapplePlacement::new(file, source, machine, false).unwrap();
    (backend, Arc::new(placement))
}

/// A context over `backend` placing tasks by `placement`.
fn placed_context(backend: Arc<LegionBackend>, placement: Arc<MapplePlacement>) -> Context {
    let runtime = Runtime::new(
        backend,
        RuntimeConfig {
            placement: Some(placement as Arc<dyn Placement>),
            ..Default::default()
        },
    );
    Context::new(Arc::new(runtime))
}

#[test]
fn framebuffer_memory_without_a_gpu_falls_back_to_system_memory() {
    let (backend, placement) = legion_without_gpus("fb.mapple", "Region * * CPU FBMEM;\n");
    let ctx = placed_context(backend, placement);
    let got = add_over_eight(&ctx);
    let want: Vec<f64> = (0..40).map(|i| (i + i * i) as f64).collect();
    assert_eq!(got, want);
}

#[test]
fn a_gpu_placement_without_gpus_runs_on_cpus_and_the_point_task_has_a_gpu_variant() {
    let (backend, placement) = legion_without_gpus("gpu.mapple", "Task * GPU;\n");
    // The notice an application prints when it loads the mapper.
    let notices = placement.notices(&backend.capabilities());
    assert!(
        notices.iter().any(|n| n.contains(
            "gpu.mapple:1:1: `Task * GPU;` names processors this machine has none of: its \
             tasks run on CPU processors"
        )),
        "{notices:?}"
    );
    let ctx = placed_context(backend.clone(), placement);
    backend.record_points();
    let got = add_over_eight(&ctx);
    let want: Vec<f64> = (0..40).map(|i| (i + i * i) as f64).collect();
    assert_eq!(got, want);
    let points = points_of(&backend, "add");
    assert!(!points.is_empty());
    assert!(
        points.iter().all(|r| r.processor.kind == ProcKind::Cpu),
        "{points:?}"
    );
    // Registered before Legion started, found by the mapper when it placed the launch: a
    // machine with GPUs runs the GPU variant where the placement puts points on GPUs.
    assert_eq!(
        backend.point_variant_kinds(),
        vec![ProcKind::Cpu, ProcKind::Gpu]
    );
}

#[test]
fn backpressure_and_garbage_collection_statements_act_on_legion() {
    let backend = legion(None);
    let task = diffuse::placement::mapple_name(&name("add"));
    let source = format!("Backpressure {task} 1;\nGarbageCollect {task} *;\n");
    let placement =
        Arc::new(MapplePlacement::new("limit.mapple", &source, backend.machine(), false).unwrap());
    let runtime = unfused_runtime(backend.clone(), Some(placement as Arc<dyn Placement>));
    let ctx = Context::new(runtime);
    let before = backend.held_back_launches();
    // Three launches before anything waits for them.
    let (a, b, want) = addends(&ctx);
    let outs: Vec<_> = (0..3).map(|_| add_into_new(&ctx, &a, &b)).collect();
    for c in &outs {
        assert_eq!(ctx.read::<f64>(&c.view()).unwrap(), want);
    }
    assert!(
        backend.held_back_launches() >= before + 2,
        "with Backpressure 1 every launch after the first waits for the one before"
    );
}

#[test]
fn a_store_past_legions_system_memory_is_out_of_memory_and_legion_goes_on() {
    let runtime = Arc::new(Runtime::new(legion(None), RuntimeConfig::default()));
    let ctx = Context::new(runtime);
    let huge = ctx.create_store(&[200_000, 200_000], DType::F64).unwrap();
    match ctx.read::<f64>(&huge.view()) {
        Err(IrError::OutOfMemory { backend, bytes, .. }) => {
            assert_eq!((backend.as_str(), bytes), ("legion", 320_000_000_000));
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    let sums = add_over_eight(&ctx);
    assert_eq!(sums.len(), 40);
    assert_eq!(sums[3], 3.0 + 9.0);
}

/// `out[p] = p + 1` for each point `p`, taking 20 ms per point.
fn nap_kind() -> Arc<diffuse_ir::TaskKind> {
    crate::common::kind_once(
        "nap",
        |b| b.arg("out", DType::F64, Privilege::Write),
        |t| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            let p = t.point()[0];
            t.write::<f64>(0)?.row_mut(0).fill(p as f64 + 1.0);
            Ok(())
        },
    )
}

/// Runs 16 napping points, all placed on processor 0 by a Mapple mapper (plus `extra`
/// statements); returns the processor index each point ran on.
fn napping_points_on_processor_zero(extra: &str) -> Vec<usize> {
    let backend = legion(None);
    let task = diffuse::placement::mapple_name(&name("nap"));
    let source = format!(
        "m = Machine(CPU);\n\
         def first(Task task) {{ return m[0, 0]; }}\n\
         IndexTaskMap {task} first;\n{extra}"
    );
    let placement =
        Arc::new(MapplePlacement::new("nap.mapple", &source, backend.machine(), false).unwrap());
    backend.record_points();
    let runtime = unfused_runtime(backend.clone(), Some(placement as Arc<dyn Placement>));
    let ctx = Context::new(runtime);
    let got = run_writer(&ctx, &nap_kind(), 16);
    assert_eq!(got, (1..=16).map(f64::from).collect::<Vec<_>>());
    let ran = points_of(&backend, "nap");
    assert_eq!(ran.len(), 16, "every point ran once: {ran:?}");
    ran.iter().map(|r| r.processor.index).collect()
}

#[test]
fn task_steal_lets_an_idle_processor_take_points_placed_elsewhere() {
    // Pinned: all 16 points on processor 0 while processor 1 idles.
    let pinned = napping_points_on_processor_zero("");
    assert!(pinned.iter().all(|&p| p == 0), "{pinned:?}");
    // Stealable: processor 1 takes some of them.
    let task = diffuse::placement::mapple_name(&name("nap"));
    let stolen = napping_points_on_processor_zero(&format!("TaskSteal {task} CPU SAME_NODE;\n"));
    assert!(
        stolen.contains(&1),
        "no point was stolen by the idle processor: {stolen:?}"
    );
}

/// `LegionBackend::start(config)`'s error, which must come before Legion starts (a refused
/// configuration leaves the process's runtime to the other tests).
fn refused(config: LegionConfig) -> String {
    match LegionBackend::start(&config) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("Legion started with {config:?}"),
    }
}

#[test]
fn configurations_past_legions_limits_are_errors_naming_flag_value_and_limit() {
    let with = |cpus: Option<usize>, flags: &[&str]| LegionConfig {
        cpus,
        flags: flags.iter().map(|f| f.to_string()).collect(),
        ..Default::default()
    };
    for (config, want) in [
        // Each of these aborted the process (exit 134) or hung inside Legion.
        (with(None, &["-ll:cpu", "64"]), "come to 65 in one process"),
        (with(Some(0), &[]), "-ll:cpu 0 is too small"),
        (with(None, &["-ll:cpu", "0"]), "-ll:cpu 0 is too small"),
        (
            with(None, &["-ll:gpu", "1"]),
            "-ll:gpu 1 asks for more GPUs than this machine has (0",
        ),
        (with(None, &["-lg:warn"]), "-lg:warn is not supported"),
        (
            with(None, &["-ll:bgwork", "0"]),
            "-ll:bgwork 0 is too small",
        ),
        (
            with(None, &["-ll:csize", "100000000"]),
            "(-ll:csize 100000000)",
        ),
        (
            with(None, &["-ll:util", "abc"]),
            r#"-ll:util "abc" is malformed"#,
        ),
        // Silently overridden before.
        (with(Some(4), &["-ll:cpu", "2"]), "-ll:cpu 2 disagree"),
        (
            LegionConfig {
                nodes: Some(2),
                ..Default::default()
            },
            "--nodes 2 with the Legion backend",
        ),
    ] {
        let message = refused(config);
        assert!(message.contains(want), "{message}");
    }
    // The process's Legion still starts afterwards, with the tests' configuration.
    assert_eq!(legion(None).machine().cpus(), 2);
}

/// Runs the test binary's `backend::start_with_flags_from_env` with `flags` in a process of its
/// own, returning its exit code and standard error.
fn start_in_a_process_of_its_own(flags: &str) -> (Option<i32>, String) {
    let this = std::env::current_exe().expect("the test binary knows its path");
    let output = std::process::Command::new(this)
        .args([
            "backend::start_with_flags_from_env",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env("DIFFUSE_TEST_LEGION_FLAGS", flags)
        .output()
        .expect("the test binary runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn flags_legion_itself_rejects_exit_with_status_1_and_its_reason() {
    // Unknown to Realm (an assertion) and to Legion (a fatal exception): both aborted the
    // process (status 134), Legion's reason lost in a buffer of standard output. Legion's
    // replay mode without its file crashed it (SIGSEGV, status 139) and gives no reason.
    for (flags, reason) in [
        (
            "-ll:bogusflag",
            "unrecognized lowlevel option: -ll:bogusflag",
        ),
        ("-lg:bogus 1", "unknown Legion option '-lg:bogus'"),
        ("-lg:replay 1", "-lg:replay 1"),
    ] {
        let (code, stderr) = start_in_a_process_of_its_own(flags);
        assert_eq!(code, Some(1), "{flags}: {stderr}");
        assert!(stderr.contains(reason), "{flags}: {stderr}");
        assert!(
            stderr.contains("error: Legion could not start") && stderr.contains(flags),
            "{flags}: {stderr}"
        );
    }
}

/// Child side: starts Legion with the flags in `DIFFUSE_TEST_LEGION_FLAGS`.
#[test]
#[ignore = "runs in a process of its own (flags_legion_itself_rejects_...)"]
fn start_with_flags_from_env() {
    let flags = std::env::var("DIFFUSE_TEST_LEGION_FLAGS").unwrap_or_default();
    let config = LegionConfig {
        cpus: Some(1),
        sysmem_mib: Some(256),
        flags: flags.split_whitespace().map(str::to_string).collect(),
        ..Default::default()
    };
    match LegionBackend::start(&config) {
        Ok(_) => println!("Legion started with {flags}"),
        Err(e) => panic!("refused before starting: {e}"),
    }
}

/// `iters` stencil iterations on a `side` x `side` grid as IR tasks over `launch` points: the
/// sum of four shifted interior views into a new store, copied back into the interior (which
/// the sum read through other partitions), each iteration its own window if `flush_each`.
/// Returns the grid.
fn ir_stencil(
    ctx: &Context,
    side: i64,
    launch: &[i64],
    iters: usize,
    flush_each: bool,
) -> Vec<f64> {
    let launch = Tuple::shape(launch).unwrap();
    let grid = ctx
        .store_from_vec(&[side, side], stencil_start(side))
        .unwrap();
    let inner = [side - 2, side - 2];
    let part = |offset: &[i64]| view_at(&grid, offset, &inner).blocked(launch).unwrap();
    for _ in 0..iters {
        let (a, b) = (
            ctx.create_store(&inner, DType::F64).unwrap(),
            ctx.create_store(&inner, DType::F64).unwrap(),
        );
        let whole = |s: &diffuse_ir::Store| s.view().blocked(launch).unwrap();
        let add = |out: &diffuse_ir::Store,
                   x: diffuse_ir::Partition,
                   xs: &diffuse_ir::Store,
                   y: diffuse_ir::Partition,
                   ys: &diffuse_ir::Store| {
            ctx.submit(
                diffuse_ir::IndexTask::new(&add_kind(), launch)
                    .arg(out, whole(out), Privilege::Write)
                    .arg(xs, x, Privilege::Read)
                    .arg(ys, y, Privilege::Read),
            )
            .unwrap()
        };
        add(&a, part(&[0, 1]), &grid, part(&[2, 1]), &grid);
        add(&b, whole(&a), &a, part(&[1, 0]), &grid);
        add(&a, whole(&b), &b, part(&[1, 2]), &grid);
        ctx.submit(
            diffuse_ir::IndexTask::new(&copy_kind(), launch)
                .arg(&grid, part(&[1, 1]), Privilege::Write)
                .arg(&a, whole(&a), Privilege::Read),
        )
        .unwrap();
        if flush_each {
            ctx.flush_window().unwrap();
        }
    }
    ctx.read::<f64>(&grid.view()).unwrap()
}

/// The `side` x `side` grid [`ir_stencil`] starts from.
fn stencil_start(side: i64) -> Vec<f64> {
    (0..side * side).map(|i| (i % 7) as f64).collect()
}

/// [`ir_stencil`] as a plain loop: the same sums in the same order.
fn sequential_stencil(side: i64, iters: usize) -> Vec<f64> {
    let n = side as usize;
    let mut grid = stencil_start(side);
    for _ in 0..iters {
        let at = |g: &[f64], i: usize, j: usize| g[i * n + j];
        let mut next = grid.clone();
        for i in 1..n - 1 {
            for j in 1..n - 1 {
                next[i * n + j] = at(&grid, i - 1, j)
                    + at(&grid, i + 1, j)
                    + at(&grid, i, j - 1)
                    + at(&grid, i, j + 1);
            }
        }
        grid = next;
    }
    grid
}

#[test]
fn repeated_launches_replay_from_legion_traces_with_the_sequential_result() {
    let _regions = regions_to_myself();
    let backend = legion(None);
    let runtime = Arc::new(Runtime::new(backend.clone(), RuntimeConfig::default()));
    let before = backend.traced_launches();
    let iters = 12;
    // A grid side no other test uses: the other tests' stores, made and dropped while this
    // one runs, would take its sums' regions and break the repetition.
    let side = 13;
    let ctx = Context::new(runtime);
    // The grid, written from the host, takes the region of a dead store that was only ever
    // zero-filled (the region cache keeps it for the next store of its shape): the host's
    // write replaces the pending fill, so the stencil's launches are traceable.
    let zeros = ctx.create_store(&[side, side], DType::F64).unwrap();
    assert!(ctx
        .read::<f64>(&zeros.view())
        .unwrap()
        .iter()
        .all(|&z| z == 0.0));
    drop(zeros);
    let grid = ir_stencil(&ctx, side, &[2, 2], iters, true);
    // Each iteration issues the same launches on the same regions (the sums' stores reuse
    // the regions of the last iteration's): all but the first few go into traces.
    let traced = backend.traced_launches() - before;
    assert!(traced >= 4, "{traced} launches traced");
    assert_eq!(bits(&grid), bits(&sequential_stencil(side, iters)));
}

#[test]
fn a_step_repeated_between_waits_keeps_its_regions_whichever_store_died_first() {
    let _regions = regions_to_myself();
    let backend = legion(None);
    let ctx = Context::new(unfused_runtime(backend.clone(), None));
    // A shape no other test uses: only this test's stores take these regions.
    const N: i64 = 29;
    let launch = Tuple::shape(&[2]).unwrap();
    let x = counting_store(&ctx, &[N]);
    let y = ctx.create_store(&[N], DType::F64).unwrap();
    let copy = |out: &diffuse_ir::Store, from: &diffuse_ir::Store| {
        ctx.submit(
            diffuse_ir::IndexTask::new(&copy_kind(), launch)
                .arg(out, out.view().blocked(launch).unwrap(), Privilege::Write)
                .arg(from, from.view().blocked(launch).unwrap(), Privilege::Read),
        )
        .unwrap();
        ctx.flush_window().unwrap();
    };
    let before = backend.traces_made().unwrap();
    let mut want: Vec<f64> = (0..N).map(|i| i as f64).collect();
    for _ in 0..12 {
        // Two temporaries of one shape: a = x, b = a + x, y = b.
        let a = ctx.create_store(&[N], DType::F64).unwrap();
        let b = ctx.create_store(&[N], DType::F64).unwrap();
        copy(&a, &x);
        submit_blocked(&ctx, &add_kind(), launch, &b, &a, &x).unwrap();
        copy(&y, &b);
        want = want.iter().map(|v| v + v).collect();
        assert_eq!(ctx.read::<f64>(&y.view()).unwrap(), want);
        // They die in program order, with a launch in between: their regions come back
        // in an order that must not decide which region each next temporary takes.
        drop(a);
        copy(&x, &y);
        drop(b);
    }
    // Four launches per step, the same four every time: four traces. (When dead regions
    // were taken back at every launch, `a` and `b` swapped regions each step: seven.)
    assert_eq!(backend.traces_made().unwrap() - before, 4);
}

#[test]
fn a_one_point_stencil_runs_in_stages_with_the_unfused_result() {
    let backend = legion(None);
    let runtime = Arc::new(Runtime::new(backend.clone(), RuntimeConfig::default()));
    runtime.record_streams(true);
    let fused = ir_stencil(&Context::new(runtime.clone()), 8, &[1, 1], 5, false);
    let executed: Vec<String> = runtime
        .take_stream_log()
        .into_iter()
        .flat_map(|r| r.executed)
        .collect();
    // Legion's launches are costly: each copy back joins the sums' launch as a stage of its
    // own, and the next iteration's sums another.
    assert!(
        executed.iter().any(|e| e.contains(", stages: ")),
        "{executed:?}"
    );
    assert!(executed.len() < 5, "{executed:?}");
    let unfused = ir_stencil(
        &Context::new(unfused_runtime(backend, None)),
        8,
        &[1, 1],
        5,
        false,
    );
    assert_eq!(bits(&fused), bits(&unfused));
    assert_eq!(bits(&fused), bits(&sequential_stencil(8, 5)));
}

/// Stores of `len` elements (a length no other test uses: the regions cycle among this
/// test's stores) over `points` launch points, made and dropped each of `iters` iterations
/// (their regions recycled): `a` written from the host, `s = sum(a)` into a fresh 0-d store
/// (zero-filled by Legion, or by the point itself in a launch of one point, then reduced
/// into), `c = a + a`, `y = s * a`, unfused on a Legion backend whose regions this test has
/// to itself. Fails unless every iteration's `c` and `y` equal the plain sums; returns how
/// many launches Legion traced meanwhile.
fn traced_recycled_reductions(iters: usize, points: i64, len: i64) -> u64 {
    let _regions = regions_to_myself();
    let backend = legion(None);
    let before = backend.traced_launches();
    let ctx = &Context::new(unfused_runtime(backend.clone(), None));
    let launch = Tuple::shape(&[points]).unwrap();
    let blocked = |s: &diffuse_ir::Store| s.view().blocked(launch).unwrap();
    let sum = diffuse_ir::ReductionOp::Sum;
    let wrong: Vec<usize> = (0..iters)
        .filter(|&it| {
            let av: Vec<f64> = (0..len).map(|i| (i as usize + 10 * it) as f64).collect();
            let a = ctx.store_from_vec(&[len], av.clone()).unwrap();
            let s = ctx.create_store(&[], DType::F64).unwrap();
            let whole = s.view().whole(1).unwrap();
            ctx.submit(
                diffuse_ir::IndexTask::new(&reduce_all_kind(sum), launch)
                    .arg(&a, blocked(&a), Privilege::Read)
                    .arg(&s, whole.clone(), Privilege::Reduce(sum)),
            )
            .unwrap();
            let c = ctx.create_store(&[len], DType::F64).unwrap();
            submit_blocked(ctx, &add_kind(), launch, &c, &a, &a).unwrap();
            let y = ctx.create_store(&[len], DType::F64).unwrap();
            ctx.submit(
                diffuse_ir::IndexTask::new(&scale_by_store_kind(), launch)
                    .arg(&y, blocked(&y), Privilege::Write)
                    .arg(&a, blocked(&a), Privilege::Read)
                    .arg(&s, whole, Privilege::Read),
            )
            .unwrap();
            let total: f64 = av.iter().sum();
            let doubled: Vec<f64> = av.iter().map(|x| x + x).collect();
            let scaled: Vec<f64> = av.iter().map(|x| total * x).collect();
            ctx.read::<f64>(&c.view()).unwrap() != doubled
                || ctx.read::<f64>(&y.view()).unwrap() != scaled
        })
        .collect();
    assert!(wrong.is_empty(), "wrong results in iterations {wrong:?}");
    backend.traced_launches() - before
}

#[test]
fn traced_launches_see_host_writes_fills_and_reductions_of_recycled_regions() {
    // Legion replays a trace on the instances as recorded; a zero fill or the points'
    // reductions still pending on a recycled region were skipped (each iteration's sum
    // started from the last one's) until such launches were kept out of traces.
    assert!(
        traced_recycled_reductions(10, 2, 26) > 0,
        "nothing was traced"
    );
}

#[test]
fn one_point_reductions_into_new_stores_are_traced_and_start_from_zero() {
    // In a launch of one point, the point zeroes a new store its launch reduces into
    // instead of a Legion fill, whose lazy contents kept the launch out of traces.
    let iters = 10;
    let traced = traced_recycled_reductions(iters, 1, 27);
    // Three launches an iteration, all traced once the regions repeat (from the fourth
    // iteration on): the sums too (with a fill, only the other two were: 14).
    assert!(traced >= 3 * (iters as u64 - 3), "{traced} launches traced");
}

#[test]
fn small_reductions_over_several_points_fold_in_point_order_and_are_traced() {
    // Each point writes its contributions to rows of partials, and one point folds them into
    // the store, arguments in order, points in order: the embedded backend's order (Legion's
    // reduction instances fold in an order of their own), and no reduction keeps the
    // launches out of traces. Two sums into one store, fused, over four points whose sums
    // give different bits in any other order.
    let _regions = regions_to_myself();
    let backend = legion(None);
    let before = backend.traced_launches();
    let rig = rig_over(backend.clone(), FusionConfig::default(), None);
    let ctx = &rig.ctx;
    let launch = Tuple::shape(&[4]).unwrap();
    let sum = diffuse_ir::ReductionOp::Sum;
    let values = [1e16, 0.0, 0.5, 0.5, -1e16, 0.0, 1.0, 0.0];
    // The sequential fold: per argument, the points' block sums in point order.
    let blocks: Vec<f64> = values.chunks(2).map(|b| b[0] + b[1]).collect();
    let once = |acc: f64| blocks.iter().fold(acc, |acc, b| acc + b);
    let expected = once(once(0.0));
    assert_ne!(
        expected,
        blocks.iter().rev().fold(0.0, |acc, b| acc + b) * 2.0,
        "the values must tell folding orders apart"
    );
    let iters = 8;
    for it in 0..iters {
        let a = ctx.store_from_vec(&[8], values.to_vec()).unwrap();
        let s = ctx.create_store(&[], DType::F64).unwrap();
        for _ in 0..2 {
            ctx.submit(
                diffuse_ir::IndexTask::new(&reduce_all_kind(sum), launch)
                    .arg(&a, a.view().blocked(launch).unwrap(), Privilege::Read)
                    .arg(&s, s.view().whole(1).unwrap(), Privilege::Reduce(sum)),
            )
            .unwrap();
        }
        let got = ctx.read::<f64>(&s.view()).unwrap();
        assert_eq!(bits(&got), bits(&[expected]), "iteration {it}: {got:?}");
    }
    // The fused sums and their fold, once the regions repeat (from the fourth iteration).
    let traced = backend.traced_launches() - before;
    assert!(traced >= 2 * (iters as u64 - 3), "{traced} launches traced");
}
