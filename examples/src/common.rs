//! Flags, runtime set-up and the result record shared by every application.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use clap::Args;
use diffuse::cli_output::eprint_line;
use diffuse::{BackendStats, JitStats, MapplePlacement};
use diffuse_array::ArrayContext;
use diffuse_ir::Context;
use serde::Serialize;

pub use diffuse::{BackendKind as Backend, JitMode, Switch};

/// Flags every application accepts: its problem, and how diffuse is set up
/// ([`diffuse::Setup`]: backend, processors, fusion, JIT, placement; each flag also read from
/// its `DIFFUSE_*` environment variable).
#[derive(Args, Debug)]
pub struct AppArgs {
    /// Problem size (grid side, vector length, ...).
    #[arg(long, default_value_t = 1024)]
    pub n: usize,
    /// Timed iterations (after one warm-up iteration).
    #[arg(long, default_value_t = 10)]
    pub iters: usize,
    /// With `--jit background`: wait after the warm-up until background compiles are done,
    /// so the timed iterations measure compiled kernels (`false` times them as they come,
    /// for breakeven measurements).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub jit_wait: bool,
    /// Print the task stream of the warm-up iteration as issued and as executed (stderr).
    #[arg(long)]
    pub streams: bool,
    /// Print one JSON record on stdout instead of a human-readable summary.
    #[arg(long)]
    pub json: bool,
    /// How diffuse runs the application.
    #[command(flatten)]
    pub setup: diffuse::Setup,
}

/// A running diffuse instance: the context libraries use and the runtime's counters.
pub struct Runtime {
    /// What applications and libraries submit to.
    pub ctx: Context,
    /// The array library on `ctx`.
    pub arrays: ArrayContext,
    /// The window, fusion and launch plans in front of the backend, and the backend's
    /// counters.
    pub runtime: Arc<diffuse::Runtime>,
    /// The bytes of host data the run may hold ([`memory_limit`]).
    host_limit: usize,
    /// Whether to print the warm-up iteration's streams.
    streams: bool,
    /// The Mapple placement, when `--mapper` gave one.
    mapple: Option<Arc<MapplePlacement>>,
    /// `--jit-wait`.
    jit_wait: bool,
    /// The shared JIT's counters when the run started (its cache outlives runs).
    jit_at_start: JitStats,
}

/// What [`Runtime::measure`] observed.
pub struct Measurement {
    /// Seconds of the warm-up iteration.
    pub warmup_seconds: f64,
    /// Seconds waited after the warm-up for background compilations.
    pub compile_wait_seconds: f64,
    /// Seconds of each timed iteration (or mean per iteration of each stretch between
    /// checks, for the solvers), in order.
    pub iteration_seconds: Vec<f64>,
    /// Timed iterations.
    pub iters: usize,
    /// Peak bytes held by stores during the timed iterations.
    pub peak_store_bytes: usize,
    /// The runtime's counters before and after the timed iterations.
    pub counters: (Counters, Counters),
}

/// The runtime's counters at one point of a run; differences between two of them describe
/// the part of the run between.
#[derive(Clone, Copy, Debug)]
pub struct Counters {
    /// When they were read.
    pub at: Instant,
    /// Index tasks submitted so far.
    pub issued: u64,
    /// Windows planned from scratch so far.
    pub analysed: u64,
    /// Windows whose plan was replayed from the memo so far.
    pub replayed: u64,
    /// Seconds the fusion layer spent deciding so far.
    pub analysis_seconds: f64,
    /// The process's resident memory now.
    pub rss_bytes: u64,
    /// The backend's counters: tasks executed, bytes moved between nodes, device traffic.
    pub backend: BackendStats,
}

impl Runtime {
    /// Starts the runtime the flags ask for.
    pub fn start(args: &AppArgs) -> anyhow::Result<Self> {
        anyhow::ensure!(
            args.iters >= 1,
            "--iters must be at least 1 (the run reports the time per timed iteration)"
        );
        let host_limit = args.setup.host_memory_limit()?;
        let diffuse::Assembled { runtime, mapple } = args.setup.start()?;
        let jit_at_start = runtime.jit().map(|j| j.stats()).unwrap_or_default();
        let ctx = Context::new(runtime.clone());
        let arrays = ArrayContext::new(ctx.clone());
        Ok(Runtime {
            ctx,
            arrays,
            runtime,
            host_limit,
            streams: args.streams,
            mapple,
            jit_wait: args.jit_wait,
            jit_at_start,
        })
    }

    /// Reads the counters now.
    pub fn counters(&self) -> Counters {
        let stats = self.runtime.planner_stats();
        Counters {
            at: Instant::now(),
            issued: self.ctx.tasks_submitted(),
            analysed: stats.analysed,
            replayed: stats.replayed,
            analysis_seconds: self.runtime.analysis_seconds(),
            rss_bytes: resident_bytes(),
            backend: self.runtime.stats(),
        }
    }

    /// Prints recorded flushes: each issued stream next to what executed.
    pub fn print_streams(&self) {
        for (i, flush) in self.runtime.take_stream_log().iter().enumerate() {
            eprint_line(&format!(
                "flush {i}: issued {} tasks, executed {}",
                flush.issued.len(),
                flush.executed.len()
            ));
            let rows = flush.issued.len().max(flush.executed.len());
            for r in 0..rows {
                let cell = |v: &Vec<String>| v.get(r).cloned().unwrap_or_default();
                eprint_line(&format!(
                    "  {:<32} | {}",
                    cell(&flush.issued),
                    cell(&flush.executed)
                ));
            }
        }
    }

    /// Runs `step` once to warm up, then `iters` timed times, flushing the window after every
    /// iteration so all work is inside the timing and no window spans two iterations. Work
    /// the application submitted before (its set-up, e.g. random inputs) runs first,
    /// untimed, so the warm-up iteration sees the same window as the timed ones. With a
    /// background JIT and `--jit-wait true` the timed iterations start once compiles are done.
    pub fn measure(
        &self,
        iters: usize,
        mut step: impl FnMut() -> anyhow::Result<()>,
    ) -> anyhow::Result<Measurement> {
        self.ctx.flush_window()?;
        self.runtime.record_streams(self.streams);
        let start = Instant::now();
        step()?;
        self.ctx.flush_window()?;
        let warmup_seconds = start.elapsed().as_secs_f64();
        let waiting = Instant::now();
        if let Some(jit) = self.runtime.jit().filter(|_| self.jit_wait) {
            jit.wait_idle();
        }
        let compile_wait_seconds = waiting.elapsed().as_secs_f64();
        if self.streams {
            self.print_streams();
            self.runtime.record_streams(false);
        }
        if let Some(mapple) = &self.mapple {
            // Decisions of the warm-up only (the log is opt-in: `--mapper-log`).
            mapple.set_logging(false);
            for line in mapple.take_log() {
                eprint_line(&line);
            }
        }

        self.runtime.backend().reset_peak_memory();
        let before = self.counters();
        // Each iteration ends with a flush, as the warm-up does: windows then never span
        // iterations, so every timed iteration replays the warm-up's plans and kernels (and
        // an application that drops last iteration's results does not get them fused away).
        // The record keeps every iteration's time: a count whose times would not fit in
        // memory is refused before anything runs for it.
        fits_in(
            self.host_limit,
            host_f64s(1, iters as u128),
            &format!("the time of each of --iters {iters} iterations"),
            "fewer --iters",
        )?;
        let mut iteration_seconds = Vec::new();
        for _ in 0..iters {
            let started = Instant::now();
            step()?;
            self.ctx.flush_window()?;
            iteration_seconds.push(started.elapsed().as_secs_f64());
        }
        let after = self.counters();
        Ok(Measurement {
            warmup_seconds,
            compile_wait_seconds,
            iteration_seconds,
            iters,
            peak_store_bytes: self.runtime.stats().peak_store_bytes as usize,
            counters: (before, after),
        })
    }

    /// The `--json` record of a run of `app` with these flags, measurement and check.
    pub fn record(
        &self,
        app: &'static str,
        args: &AppArgs,
        m: Measurement,
        check: f64,
    ) -> RunRecord {
        let (before, after) = m.counters;
        // Per timed iteration (0 when there were none).
        let per = |v: f64| v / m.iters.max(1) as f64;
        // A backend counter's growth over the timed iterations, per iteration.
        let backend_per = |counter: fn(&BackendStats) -> u64| {
            per((counter(&after.backend) - counter(&before.backend)) as f64)
        };
        RunRecord {
            app,
            backend: args.setup.backend,
            fusion: args.setup.fusion,
            n: args.n,
            iters: m.iters,
            procs: self.runtime.backend().machine().cpus(),
            seconds_per_iter: per(after.at.duration_since(before.at).as_secs_f64()),
            warmup_seconds: m.warmup_seconds,
            compile_wait_seconds: m.compile_wait_seconds,
            iteration_seconds: m.iteration_seconds,
            tasks_issued_per_iter: per((after.issued - before.issued) as f64),
            tasks_executed_per_iter: backend_per(|s| s.tasks_executed),
            peak_store_bytes: m.peak_store_bytes,
            check,
            jit: args.setup.jit,
            compile_seconds: self.jit_stats().compile_seconds - self.jit_at_start.compile_seconds,
            kernels_compiled: self.jit_stats().kernels_compiled
                - self.jit_at_start.kernels_compiled,
            kernels_loaded: self.jit_stats().kernels_loaded - self.jit_at_start.kernels_loaded,
            compiled_points: self.runtime.stats().compiled_points,
            segment_points: self.runtime.stats().segment_points,
            traced_launches: self.runtime.stats().traced_launches,
            gpu_points: self.runtime.stats().gpu_points,
            memo_hits: after.replayed - before.replayed,
            memo_misses: after.analysed - before.analysed,
            analysis_seconds_per_iter: per(after.analysis_seconds - before.analysis_seconds),
            rss_start_bytes: before.rss_bytes,
            rss_end_bytes: after.rss_bytes,
            iterations: None,
            residual: None,
            converged: None,
            nodes: self.runtime.backend().machine().nodes,
            points_executed: self.runtime.stats().points_executed,
            bytes_moved_per_iter: backend_per(|s| s.bytes_moved),
            h2d_bytes_per_iter: backend_per(|s| s.h2d_bytes),
            d2h_bytes_per_iter: backend_per(|s| s.d2h_bytes),
            device_syncs_per_iter: backend_per(|s| s.device_syncs),
            kernel_launches_per_iter: backend_per(|s| s.kernel_launches),
            gpu_kernels_built: self.runtime.gpu_kernels().built.len(),
            gpu_kernels_declined: self.runtime.gpu_kernels().declined,
            result_digest: String::new(),
        }
    }

    fn jit_stats(&self) -> JitStats {
        self.runtime.jit().map_or(self.jit_at_start, |j| j.stats())
    }
}

impl Drop for Runtime {
    /// Lets background compilations finish: a compile thread still inside MLIR when the
    /// process exits would abort it.
    fn drop(&mut self) {
        if let Some(jit) = self.runtime.jit() {
            jit.wait_idle();
        }
    }
}

/// The largest difference between `got` and `want`, relative to `max(1, |want|)` so that
/// large values are compared relatively and small ones absolutely.
pub fn max_error(got: &[f64], want: &[f64]) -> f64 {
    if got.len() != want.len() {
        return f64::INFINITY;
    }
    got.iter()
        .zip(want)
        .map(|(g, w)| (g - w).abs() / w.abs().max(1.0))
        .fold(0.0, |acc, e| {
            if e.is_nan() {
                f64::INFINITY
            } else {
                acc.max(e)
            }
        })
}

/// Runs `app` on `n` for `iters` iterations with each of `procs` processors, unfused and
/// fused: every run must agree with the sequential loop (check at most `1e-12`), issue
/// `issued` index tasks per iteration and execute `executed.0` of them unfused,
/// `executed.1` fused. Returns the records, for the caller's further checks.
#[cfg(test)]
pub fn check_app(
    app: fn(&AppArgs) -> anyhow::Result<RunRecord>,
    (n, iters): (usize, usize),
    procs: &[usize],
    issued: f64,
    executed: (f64, f64),
) -> Vec<RunRecord> {
    let mut records = Vec::new();
    for &p in procs {
        for (fusion, executed) in [(Switch::Off, executed.0), (Switch::On, executed.1)] {
            let record = app(&test_args(n, iters, p, fusion)).unwrap();
            assert!(
                record.check <= 1e-12,
                "procs {p}, {fusion:?}: check {}",
                record.check
            );
            assert_eq!(record.tasks_issued_per_iter, issued, "{fusion:?}");
            assert_eq!(record.tasks_executed_per_iter, executed, "{fusion:?}");
            records.push(record);
        }
    }
    records
}

/// Flags for unit tests of the applications: small and quick.
#[cfg(test)]
pub fn test_args(n: usize, iters: usize, procs: usize, fusion: Switch) -> AppArgs {
    AppArgs {
        n,
        iters,
        jit_wait: true,
        streams: false,
        json: false,
        setup: diffuse::Setup {
            fusion,
            jit: JitMode::Sync,
            procs: Some(procs),
            // Every processor gets a point: the tests check partitioned execution on small
            // grids.
            min_block: 1,
            ..Default::default()
        },
    }
}

/// The most bytes the run's host data may take ([`diffuse::Setup::host_memory_limit`]).
pub fn memory_limit(args: &AppArgs) -> anyhow::Result<usize> {
    Ok(args.setup.host_memory_limit()?)
}

/// Bytes of `vectors` host vectors of `elements` `f64` values each, saturating at
/// `u128::MAX` (a size no limit admits) instead of wrapping.
pub fn host_f64s(vectors: u128, elements: u128) -> u128 {
    vectors.saturating_mul(elements).saturating_mul(8)
}

/// `--n` as a store extent: refused (rather than wrapped to a negative extent) past
/// `i64::MAX`.
pub fn extent(n: usize) -> anyhow::Result<i64> {
    i64::try_from(n).map_err(|_| anyhow::anyhow!("--n {n} is too large: at most {}", i64::MAX))
}

/// Fails with a one-line error when `bytes` of host data for `what` would not fit in the
/// memory the run may use ([`memory_limit`]). Called before the data is allocated: under
/// Linux's overcommit a large allocation succeeds and the kernel kills the process once
/// its pages are touched, and data that grows piece by piece would be allocated until then.
pub fn ensure_fits(args: &AppArgs, bytes: u128, what: &str) -> anyhow::Result<()> {
    fits_in(memory_limit(args)?, bytes, what, "a smaller --n")
}

/// [`ensure_fits`] for `copies` host copies of a `side` x `side` grid of `f64`, which `what`
/// names (`grids`, `matrix`, ...).
pub fn ensure_square_fits(
    args: &AppArgs,
    copies: u128,
    side: u128,
    what: &str,
) -> anyhow::Result<()> {
    ensure_fits(
        args,
        host_f64s(copies, side.saturating_mul(side)),
        &format!("the {side} x {side} {what} of --n {}", args.n),
    )
}

/// [`ensure_fits`] against `limit`; `remedy` is what to try instead.
fn fits_in(limit: usize, bytes: u128, what: &str, remedy: &str) -> anyhow::Result<()> {
    let needs = if bytes == u128::MAX {
        "more than 2^128 bytes".to_string()
    } else {
        format!("about {bytes} bytes")
    };
    anyhow::ensure!(
        bytes <= limit as u128,
        "out of memory: {what}: {needs} of host data, more than the {limit}-byte limit \
         (--memory-limit, default the available memory; try {remedy})"
    );
    Ok(())
}

/// The result of one application run (the `--json` record).
#[derive(Serialize, Debug)]
pub struct RunRecord {
    /// Application name.
    pub app: &'static str,
    /// Backend that executed it.
    pub backend: Backend,
    /// Fusion setting.
    pub fusion: Switch,
    /// Problem size.
    pub n: usize,
    /// Timed iterations.
    pub iters: usize,
    /// Worker processors used.
    pub procs: usize,
    /// Mean seconds per timed iteration (warm-up excluded).
    pub seconds_per_iter: f64,
    /// Seconds of the warm-up iteration.
    pub warmup_seconds: f64,
    /// Index tasks the application submitted per iteration.
    pub tasks_issued_per_iter: f64,
    /// Index tasks the backend executed per iteration.
    pub tasks_executed_per_iter: f64,
    /// Peak bytes held by stores during the timed iterations.
    pub peak_store_bytes: usize,
    /// Max error against a plain sequential reference computed in the same run (absolute
    /// for values below 1, relative above).
    pub check: f64,
    /// JIT setting.
    pub jit: JitMode,
    /// Seconds after the warm-up iteration spent waiting for background compilations, so
    /// that the timed iterations run the compiled kernels (0 unless `--jit on`).
    pub compile_wait_seconds: f64,
    /// Seconds of each timed iteration, in order (with `--jit on --jit-wait false` the first
    /// ones may run native kernels while compiles finish).
    pub iteration_seconds: Vec<f64>,
    /// Seconds this run spent compiling kernels (warm-up, mostly).
    pub compile_seconds: f64,
    /// Kernels this run compiled (kernels already in the process-wide cache are reused).
    pub kernels_compiled: u64,
    /// Kernels this run loaded from the on-disk kernel cache instead of compiling them.
    pub kernels_loaded: u64,
    /// Point tasks that ran a compiled kernel, warm-up included.
    pub compiled_points: u64,
    /// Point tasks that ran compiled segments between native constituents, or one per stage
    /// (a fused task of several stages), warm-up included.
    pub segment_points: u64,
    /// Of those, the ones that ran on the GPU.
    pub gpu_points: u64,
    /// Launches issued in Legion traces, warm-up included (Legion only).
    pub traced_launches: u64,
    /// Windows of the timed iterations whose fusion plan was replayed from the memo.
    pub memo_hits: u64,
    /// Windows of the timed iterations planned from scratch.
    pub memo_misses: u64,
    /// Seconds per timed iteration the fusion layer spent deciding what runs (planning,
    /// memo lookups, cuts, building fused tasks), execution excluded.
    pub analysis_seconds_per_iter: f64,
    /// Resident memory of the process when the timed iterations started.
    pub rss_start_bytes: u64,
    /// Resident memory of the process when they ended.
    pub rss_end_bytes: u64,
    /// Solvers: iterations run (the others: none).
    pub iterations: Option<usize>,
    /// Solvers: the last checked residual norm relative to `||b||` (the others: none).
    pub residual: Option<f64>,
    /// Solvers: whether the residual went below `--rtol` (or, with `--rtol 0`, reached
    /// exactly zero) within `--iters` iterations; a run with a tolerance that did not also
    /// warns on stderr (the others: none).
    pub converged: Option<bool>,
    /// Nodes of the machine (processes of a multi-process Legion run, else 1).
    pub nodes: usize,
    /// Point tasks this process ran, warm-up included (in a multi-process run, its share).
    pub points_executed: u64,
    /// Bytes of store data moved between nodes per timed iteration (multi-process Legion
    /// runs; 0 on one node).
    pub bytes_moved_per_iter: f64,
    /// Bytes copied from the host to devices per timed iteration (0 without a GPU); in
    /// steady state data that stays on the device makes it 0.
    pub h2d_bytes_per_iter: f64,
    /// Bytes copied from devices to the host per timed iteration (0 without a GPU).
    pub d2h_bytes_per_iter: f64,
    /// Times per timed iteration the backend waited for a device (flushes, host reads).
    pub device_syncs_per_iter: f64,
    /// Kernel launches enqueued on devices per timed iteration.
    pub kernel_launches_per_iter: f64,
    /// Tasks placed on a GPU whose kernel was built for it (with `--gpu` or a mapper that
    /// places tasks on GPUs).
    pub gpu_kernels_built: usize,
    /// Tasks placed on a GPU whose kernel could not be built for it (they ran on the CPUs),
    /// with the reason.
    pub gpu_kernels_declined: std::collections::BTreeMap<String, String>,
    /// FNV-1a hash of the bits of the application's result values, in hexadecimal: equal
    /// digests are bitwise-equal results (runs on different backends or process counts
    /// compare by it).
    pub result_digest: String,
}

impl RunRecord {
    /// The record with the digest of the result `parts` (in order).
    pub fn with_result(mut self, parts: &[&[f64]]) -> Self {
        self.result_digest = digest(parts);
        self
    }
}

/// FNV-1a over the little-endian bits of every value of `parts`, as 16 hex digits.
pub fn digest(parts: &[&[f64]]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in parts
        .iter()
        .flat_map(|p| p.iter())
        .flat_map(|v| v.to_bits().to_le_bytes())
    {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// The process's resident memory in bytes (0 where `/proc` cannot tell).
pub fn resident_bytes() -> u64 {
    // statm's second field is resident pages; Linux pages here are 4 KiB.
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// Prints the record as JSON (`--json`) or as a short summary. A failed write (a full disk,
/// a closed stdout, a reader that went away) is an error naming stdout.
pub fn report(record: &RunRecord, json: bool) -> anyhow::Result<()> {
    let text = if json {
        serde_json::to_string(record)? + "\n"
    } else {
        summary(record)
    };
    diffuse::cli_output::print(&text).context("writing the record to stdout")
}

/// The human-readable summary of `record`.
fn summary(record: &RunRecord) -> String {
    use std::fmt::Write as _;
    let mib = |bytes: f64| bytes / (1024.0 * 1024.0);
    // A solver that converged during its warm-up timed no iteration: no time per iteration.
    let timing = if record.iters == 0 {
        "no timed iterations (the warm-up ran them all)".to_string()
    } else {
        format!("{:.3} ms/iter", record.seconds_per_iter * 1e3)
    };
    let mut text = format!(
        "{}: n={} iters={} procs={} backend={:?} fusion={:?} jit={:?}\n  {timing} (warm-up {:.3} ms), \
         {} tasks issued / {} executed per iter, peak store memory {:.1} MiB\n  \
         compiled {} kernels (loaded {} from the kernel cache) in {:.3} s; {} point tasks ran \
         compiled code\n  \
         check ({}): {:e}\n",
        record.app,
        record.n,
        record.iters,
        record.procs,
        record.backend,
        record.fusion,
        record.jit,
        record.warmup_seconds * 1e3,
        record.tasks_issued_per_iter,
        record.tasks_executed_per_iter,
        mib(record.peak_store_bytes as f64),
        record.kernels_compiled,
        record.kernels_loaded,
        record.compile_seconds,
        record.compiled_points,
        if record.iterations.is_some() {
            "the true residual ||b - A x|| / ||b||"
        } else {
            "max error vs sequential loop"
        },
        record.check
    );
    if let (Some(iterations), Some(residual)) = (record.iterations, record.residual) {
        let outcome = match record.converged {
            Some(true) => "converged",
            _ => "NOT converged",
        };
        let _ = writeln!(
            text,
            "  {outcome}: {iterations} iterations (the first ones warm-up, untimed), method's \
             residual {residual:e} relative to ||b||"
        );
    }
    if record.gpu_points > 0 {
        let _ = writeln!(
            text,
            "  GPU: {} point tasks, {} kernels built, {} declined (run on the CPUs); per iter \
             {:.1} MiB to the device, {:.1} MiB back, {} syncs, {} kernel launches",
            record.gpu_points,
            record.gpu_kernels_built,
            record.gpu_kernels_declined.len(),
            mib(record.h2d_bytes_per_iter),
            mib(record.d2h_bytes_per_iter),
            record.device_syncs_per_iter,
            record.kernel_launches_per_iter
        );
    }
    let _ = writeln!(
        text,
        "  memo: {} hits, {} misses; analysis {:.1} us/iter; resident memory {:.1} -> {:.1} MiB",
        record.memo_hits,
        record.memo_misses,
        record.analysis_seconds_per_iter * 1e6,
        mib(record.rss_start_bytes as f64),
        mib(record.rss_end_bytes as f64)
    );
    text
}
