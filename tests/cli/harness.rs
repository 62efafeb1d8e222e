//! The command-line fuzz harness shared by the `diffuse` and `diffuse-examples` fuzz tests
//! (each includes this file): runs a program with given arguments and a given standard
//! output, and judges how it ended. A run passes when it was not killed (by a signal, the
//! kernel's OOM killer: 137, an abort: 134), did not panic (101), finished within its time
//! limit, and, when it failed, said why in one `error: ...` line.
//!
//! Cases are a fixed list of worst cases plus `DIFFUSE_FUZZ_RUNS` random combinations
//! (default a few) drawn from a seed (`DIFFUSE_FUZZ_SEED`, default the clock) that the test
//! prints, so that a failure can be replayed.

#![allow(dead_code)] // Each including test uses its part.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Exit statuses of a run that crashed instead of reporting an error: a Rust panic, and
/// SIGABRT and SIGKILL as a shell reports them.
pub const CRASH_STATUSES: [i32; 3] = [101, 134, 137];

/// The status of a run whose stdout reader went away (`diffuse::cli_output`).
pub const BROKEN_PIPE_STATUS: i32 = 141;

/// Where a run's standard output goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stdout {
    /// `/dev/null`.
    Null,
    /// `/dev/full`: every write fails with "no space left on device".
    Full,
    /// Closed (file descriptor 1 not open).
    Closed,
    /// A pipe whose reader is gone before the program writes (`| head -0`).
    BrokenPipe,
}

/// How a run ended.
#[derive(Debug)]
pub struct Outcome {
    /// The exit status, when it exited.
    pub status: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// Whether it was still running at the time limit (and was killed).
    pub timed_out: bool,
    /// Its standard error.
    pub stderr: String,
}

/// Runs `program` with `args`, its stdout as `stdout`, killing it after `limit`.
pub fn run(program: &str, args: &[String], stdout: Stdout, limit: Duration) -> Outcome {
    let mut command = match stdout {
        // The shell closes descriptor 1 and then runs the program in its place.
        Stdout::Closed => {
            let mut c = Command::new("sh");
            c.arg("-c").arg("exec \"$@\" >&-").arg("sh").arg(program);
            c
        }
        _ => Command::new(program),
    };
    command
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    // Quiet logs: only what the program reports itself.
    command
        .env("RUST_LOG", "error")
        .env_remove("RUST_BACKTRACE");
    match stdout {
        Stdout::Null | Stdout::Closed => {
            command.stdout(Stdio::null());
        }
        Stdout::Full => {
            let full = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .expect("/dev/full opens");
            command.stdout(full);
        }
        Stdout::BrokenPipe => {
            command.stdout(Stdio::piped());
        }
    }
    let mut child = command.spawn().expect("the program starts");
    // Dropping the read end leaves the pipe without a reader.
    drop(child.stdout.take());
    let stderr = child.stderr.take().expect("stderr is piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.take(1 << 20).read_to_string(&mut text);
        text
    });
    let (status, timed_out) = wait(&mut child, limit);
    let stderr = reader.join().unwrap_or_default();
    use std::os::unix::process::ExitStatusExt as _;
    Outcome {
        status: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        timed_out,
        stderr,
    }
}

/// Waits for `child` at most `limit`; kills it past that.
fn wait(child: &mut Child, limit: Duration) -> (Option<std::process::ExitStatus>, bool) {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return (Some(status), false),
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                return (child.wait().ok(), true);
            }
        }
    }
}

/// Why `outcome` is not acceptable, if it is not: killed, crashed, timed out, a panic
/// message, or a failure without exactly one `error:` line (exit 1; clap's usage errors,
/// exit 2, start with one). A broken pipe ends quietly with [`BROKEN_PIPE_STATUS`].
pub fn judge(outcome: &Outcome) -> Option<String> {
    if outcome.timed_out {
        return Some("hung: still running at the time limit".into());
    }
    if let Some(signal) = outcome.signal {
        return Some(format!("killed by signal {signal}"));
    }
    let status = outcome.status?;
    if CRASH_STATUSES.contains(&status) {
        return Some(format!("crashed with exit status {status}"));
    }
    if outcome.stderr.contains("panicked") {
        return Some("a panic message".into());
    }
    let errors = outcome
        .stderr
        .lines()
        .filter(|l| l.starts_with("error:"))
        .count();
    match status {
        0 | BROKEN_PIPE_STATUS => {
            (errors != 0).then(|| "an error line in a run that passed".into())
        }
        1 => {
            let other = outcome
                .stderr
                .lines()
                .filter(|l| !l.starts_with("error:") && !l.starts_with("warning:"))
                .filter(|l| !l.starts_with("notice:"))
                .count();
            (errors != 1 || other != 0).then(|| "not exactly one `error:` line".into())
        }
        2 => (!outcome.stderr.starts_with("error:"))
            .then(|| "a usage error not starting with `error:`".into()),
        other => Some(format!("exit status {other}")),
    }
}

/// A small deterministic generator (xorshift64*) for the random cases.
pub struct Random(u64);

impl Random {
    /// The generator of `DIFFUSE_FUZZ_SEED`, else of the clock; returns the seed too.
    pub fn from_env() -> (Self, u64) {
        let seed = std::env::var("DIFFUSE_FUZZ_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
            });
        (Random(seed | 1), seed)
    }

    /// The next number.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next() % items.len() as u64) as usize]
    }
}

/// The random cases to run: `DIFFUSE_FUZZ_RUNS`, else `default`.
pub fn random_runs(default: usize) -> usize {
    std::env::var("DIFFUSE_FUZZ_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Runs every case (program arguments and stdout) on `threads` threads, each with the time
/// limit, and fails with the list of the unacceptable ones.
pub fn run_all(program: &str, cases: Vec<(Vec<String>, Stdout)>, limit: Duration, threads: usize) {
    let total = cases.len();
    let queue = std::sync::Mutex::new(cases);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| loop {
                let Some((args, stdout)) = queue.lock().unwrap().pop() else {
                    return;
                };
                let outcome = run(program, &args, stdout, limit);
                if let Some(why) = judge(&outcome) {
                    failures.lock().unwrap().push(format!(
                        "{program} {} (stdout {stdout:?}): {why}; status {:?}, stderr:\n{}",
                        args.join(" "),
                        outcome.status,
                        outcome.stderr
                    ));
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    println!("{total} runs, {} unacceptable", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `head` followed by `defaults` as `--flag=value` arguments (so that values starting with
/// `-` stay values), each flag of `overrides` replacing its default or added after them.
pub fn with_overrides(
    head: &[&str],
    defaults: &[(&str, &str)],
    overrides: &[(&str, String)],
) -> Vec<String> {
    let mut flags: Vec<(String, String)> = defaults
        .iter()
        .map(|(f, v)| (f.to_string(), v.to_string()))
        .collect();
    for (flag, value) in overrides {
        match flags.iter_mut().find(|(f, _)| f == flag) {
            Some(slot) => slot.1 = value.clone(),
            None => flags.push((flag.to_string(), value.clone())),
        }
    }
    head.iter()
        .map(|s| s.to_string())
        .chain(flags.into_iter().map(|(f, v)| format!("{f}={v}")))
        .collect()
}

/// A fresh scratch directory `<temp>/<prefix>-<pid>` for the files the cases name.
pub fn scratch_dir(prefix: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{prefix}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("the scratch directory is created");
    dir
}

/// `dir/name` as a command-line argument.
pub fn arg_in(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

/// Writes `text` to `dir/name` and returns its path as a command-line argument.
pub fn write_file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("the scratch file is written");
    path.display().to_string()
}
