//! diffuse on two Legion nodes: this test binary run as the two ranks of a
//! `diffuse launch -n 2`, each a Legion node of its own, the program control replicated.
//!
//! The `two_ranks_*` tests launch this binary through `diffuse launch`; each rank runs the
//! `rank_*` tests, which a plain `cargo test` skips (`#[ignore]`). Both ranks run them on one
//! test thread, in the same (name) order, as control replication requires, with the same
//! property seed.

use std::collections::BTreeMap;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, Instant};

use diffuse::{Backend, MapplePlacement, Placement};
use diffuse_ir::{Context, Tuple};

use crate::backend::add_over_eight;
use crate::common::legion::{legion, points_of};
use crate::common::streams::{cases_from_env, run_compiled_property, run_property, On};
use crate::common::{name, submit_sum_all};
use crate::common::{unfused, unfused_runtime};

/// Runs the `rank_*` tests named by `filter` as two ranks of `diffuse launch`, every rank's
/// output shown, each line prefixed `[rank K]`. Ranks still running after ten minutes (ranks
/// whose operations diverged wait for each other forever) are stopped and the run fails.
/// Fails the test unless every rank succeeded; returns the output.
fn launch_ranks(filter: &str) -> Output {
    let output = diffuse_launch(&["--grace", "30", "--time-limit", "600"], filter)
        .env("DIFFUSE_PROPERTY_SEED", "20261124")
        .output()
        .expect("diffuse launch runs");
    assert!(
        output.status.success(),
        "the ranks failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// How a rank runs this binary's `rank_*` tests named by a filter: the ignored ones, on one
/// test thread, their output shown.
const RANK_TEST_FLAGS: [&str; 3] = ["--ignored", "--test-threads=1", "--nocapture"];

/// `diffuse launch` with `options` running this binary's tests named by `filter` as two
/// ranks, every rank's output shown.
fn diffuse_launch(options: &[&str], filter: &str) -> Command {
    let this = std::env::current_exe().expect("the test binary knows its path");
    let mut launch = Command::new(env!("CARGO_BIN_EXE_diffuse"));
    launch
        .args(["launch", "-n", "2", "--output", "all"])
        .args(options)
        .arg("--")
        .arg(this)
        .arg(filter)
        .args(RANK_TEST_FLAGS);
    launch
}

/// Rank `rank` of a run of two started by hand (no launcher) with the coordinator at `port`
/// of this machine, running this binary's tests named by `filter`.
fn rank_of_two(port: u16, rank: usize, filter: &str) -> Command {
    let this = std::env::current_exe().expect("the test binary knows its path");
    let mut command = Command::new(this);
    command
        .arg(filter)
        .args(RANK_TEST_FLAGS)
        .env("DIFFUSE_RANK", rank.to_string())
        .env("DIFFUSE_RANKS", "2")
        .env("DIFFUSE_COORDINATOR", format!("127.0.0.1:{port}"));
    command
}

/// A port of this machine no one listens on.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// What rank `rank` printed after `tag` on each line holding it (libtest may print the
/// test's name before it on the same line).
fn tagged(output: &Output, rank: usize, tag: &str) -> Vec<String> {
    let prefix = format!("[rank {rank}] ");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix(prefix.as_str()))
        .filter_map(|l| l.find(tag).map(|at| l[at + tag.len()..].to_string()))
        .collect()
}

#[test]
fn two_ranks_run_the_points_of_one_launch_on_both_nodes() {
    let output = launch_ranks("distributed::rank_points");
    for rank in 0..2 {
        let lines = tagged(&output, rank, "points per node: ");
        assert_eq!(
            lines,
            ["0:4 1:4"],
            "rank {rank} saw the launch's points elsewhere"
        );
        assert_eq!(tagged(&output, rank, "alternating nodes: "), ["ok"]);
        assert_eq!(
            tagged(&output, rank, "reductions from both nodes: "),
            ["ok"]
        );
    }
}

#[test]
fn two_ranks_run_random_streams_as_one_process_and_the_sequential_model() {
    let output = launch_ranks("distributed::rank_streams");
    for rank in 0..2 {
        let lines = tagged(&output, rank, "streams checked: ");
        assert_eq!(lines.len(), 2, "rank {rank} did not run both properties");
    }
}

#[test]
fn a_rank_that_never_starts_fails_the_others_within_the_bootstrap_timeout() {
    // Rank 0 of a run of two, alone: its bootstrap gives up after 2 s, naming rank 1.
    let started = Instant::now();
    let output = rank_of_two(free_port(), 0, "distributed::rank_points")
        .env("DIFFUSE_BOOTSTRAP_TIMEOUT", "2")
        .output()
        .expect("the test binary runs");
    assert!(!output.status.success());
    assert!(started.elapsed() < Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("only 1 of 2 ranks joined") && stderr.contains("rank 1"),
        "{stderr}"
    );
}

/// Rank `rank` of a run of two started by hand (no launcher to stop it) with the extra
/// environment `env`, running `rank_runs_until_stopped`; its output piped.
fn rank_by_hand(port: u16, rank: usize, env: &[(&str, &str)]) -> std::process::Child {
    rank_of_two(port, rank, "distributed::rank_runs_until_stopped")
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("a rank starts")
}

/// Two ranks by hand, once both have run launches together.
fn two_running_ranks(env: &[(&str, &str)]) -> [std::process::Child; 2] {
    let port = free_port();
    let zero = rank_by_hand(port, 0, env);
    let mut one = rank_by_hand(port, 1, env);
    let stdout = one.stdout.take().expect("piped");
    let running = std::io::BufRead::lines(std::io::BufReader::new(stdout))
        .map_while(Result::ok)
        .any(|l| l.contains("ranks running"));
    assert!(running, "rank 1 never ran");
    [zero, one]
}

/// Waits for `rank` to exit on its own within `limit` of `since` (killing it and failing
/// otherwise, naming `what` happened); returns its standard error.
fn exits_on_its_own(
    mut rank: std::process::Child,
    since: Instant,
    limit: Duration,
    what: &str,
) -> String {
    let status = loop {
        if let Some(status) = rank.try_wait().expect("a rank can be waited for") {
            break status;
        }
        if since.elapsed() > limit {
            let _ = rank.kill();
            panic!("a rank still ran {limit:?} after {what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = rank.wait_with_output().expect("the rank's output");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(status.code(), Some(1), "{stderr}");
    stderr
}

#[test]
fn a_rank_that_dies_stops_the_others_without_a_launcher() {
    // Rank 1 is killed once both run: rank 0 must exit on its own, naming rank 1, instead of
    // waiting for it.
    let [zero, mut one] = two_running_ranks(&[]);
    one.kill().expect("rank 1 can be killed");
    let _ = one.wait();
    let stderr = exits_on_its_own(zero, Instant::now(), Duration::from_secs(30), "rank 1 died");
    assert!(stderr.contains("rank 1 closed its connection"), "{stderr}");
}

#[test]
fn a_rank_that_stops_fails_the_others_within_the_rank_timeout() {
    // A stopped rank (SIGSTOP, like a hung node) keeps its connections open: the other must
    // exit within DIFFUSE_RANK_TIMEOUT (3 s here) naming it instead of spinning forever.
    // Rank 1 stopped is noticed by rank 0, which watches every rank; rank 0 stopped by rank 1.
    for stopped in [1, 0] {
        let ranks = two_running_ranks(&[("DIFFUSE_RANK_TIMEOUT", "3")]);
        let pid = ranks[stopped].id().to_string();
        let stop = Command::new("kill").args(["-STOP", &pid]).status();
        assert!(
            stop.is_ok_and(|s| s.success()),
            "rank {stopped} cannot be stopped"
        );
        let since = Instant::now();
        let [zero, one] = ranks;
        let (mut frozen, survivor) = if stopped == 1 {
            (one, zero)
        } else {
            (zero, one)
        };
        let stderr = exits_on_its_own(survivor, since, Duration::from_secs(20), "a stop");
        let _ = frozen.kill();
        let _ = frozen.wait();
        assert!(
            stderr.contains(&format!("rank {stopped} sent nothing for"))
                && stderr.contains("stopped or hung"),
            "{stderr}"
        );
        assert!(
            since.elapsed() >= Duration::from_secs(2),
            "gave up before the timeout"
        );
    }
}

#[test]
fn diffuse_launch_ends_a_run_whose_rank_stops_within_its_rank_timeout() {
    // The same through `diffuse launch --rank-timeout 3`: rank 0 names the stopped rank 1
    // and exits, and the launch stops rank 1 and exits with status 1.
    let mut launch = diffuse_launch(
        &["--rank-timeout", "3"],
        "distributed::rank_runs_until_stopped",
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("diffuse launch starts");
    let stdout = launch.stdout.take().expect("piped");
    let running = std::io::BufRead::lines(std::io::BufReader::new(stdout))
        .map_while(Result::ok)
        .any(|l| l.starts_with("[rank 1]") && l.contains("ranks running"));
    assert!(running, "rank 1 never ran");
    // Rank 1: the child of the launch whose environment says so.
    let children = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", launch.id()))
        .expect("the launch's children are listed");
    let one = children
        .split_whitespace()
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == b"DIFFUSE_RANK=1"))
        })
        .expect("rank 1 is a child of the launch")
        .to_string();
    let stop = Command::new("kill").args(["-STOP", &one]).status();
    assert!(stop.is_ok_and(|s| s.success()), "rank 1 cannot be stopped");
    let stderr = exits_on_its_own(launch, Instant::now(), Duration::from_secs(20), "a stop");
    assert!(
        stderr.contains("rank 1 sent nothing for")
            && stderr.contains("rank 0 exited with status 1"),
        "{stderr}"
    );
}

/// Rank side: launches over both nodes for up to a minute (until a test stops it).
#[test]
#[ignore = "runs as a rank (a_rank_that_dies_stops_the_others_without_a_launcher)"]
fn rank_runs_until_stopped() {
    let ctx = unfused(legion(None));
    let started = Instant::now();
    let mut announced = false;
    while started.elapsed() < Duration::from_secs(60) {
        add_over_eight(&ctx);
        if !announced {
            println!("ranks running");
            announced = true;
        }
    }
}

/// Rank side: `c = a + b` over 8 points, placed by default blocks over the machine's two
/// nodes (prints how many points each node ran), then by a Mapple mapper that alternates
/// nodes point by point (checked point by point).
#[test]
#[ignore = "runs as a rank of `diffuse launch` (two_ranks_run_the_points_of_one_launch_on_both_nodes)"]
fn rank_points_of_one_launch() {
    let backend = legion(None);
    assert!(backend.cluster().is_distributed(), "not launched as a rank");
    assert_eq!(backend.cluster().ranks, 2);
    let machine = backend.machine();
    assert_eq!((machine.nodes, machine.cpus_per_node), (2, 1));
    let want: Vec<f64> = (0..40).map(|i| (i + i * i) as f64).collect();
    let run = |placement: Option<Arc<dyn Placement>>| {
        backend.record_points();
        let runtime = unfused_runtime(backend.clone(), placement);
        assert_eq!(add_over_eight(&Context::new(runtime)), want);
        let records = points_of(&backend, "add");
        assert_eq!(records.len(), 8, "every point ran once: {records:?}");
        records
    };
    let mut per_node = BTreeMap::new();
    for r in run(None) {
        *per_node.entry(r.processor.node).or_insert(0) += 1;
    }
    let line: Vec<String> = per_node.iter().map(|(n, c)| format!("{n}:{c}")).collect();
    println!("points per node: {}", line.join(" "));

    let task = diffuse::placement::mapple_name(&name("add"));
    let source = format!(
        "m = Machine(CPU);\n\
         def alternate(Task task) {{ return m[task.ipoint[0] % 2, 0]; }}\n\
         IndexTaskMap {task} alternate;\n"
    );
    let mapple =
        MapplePlacement::new("alternate.mapple", &source, machine, true).expect("the mapper loads");
    for (i, r) in run(Some(Arc::new(mapple))).iter().enumerate() {
        assert_eq!(
            r.processor.node,
            i % 2,
            "point {i} ran on {:?}",
            r.processor
        );
    }
    println!("alternating nodes: ok");
}

/// Rank side: sums into one 0-d store from launches of one point (node 0 only) and then of
/// two and four points (both nodes): every node's contributions count.
#[test]
#[ignore = "runs as a rank of `diffuse launch` (two_ranks_run_the_points_of_one_launch_on_both_nodes)"]
fn rank_points_reduce_into_one_store_from_both_nodes() {
    let ctx = unfused(legion(None));
    let data = ctx
        .store_from_vec(&[4], vec![1.0f64, 10.0, 100.0, 1000.0])
        .unwrap();
    let acc = ctx.store_from_vec(&[], vec![0.5f64]).unwrap();
    for points in [1, 2, 2, 4] {
        let launch = Tuple::shape(&[points]).unwrap();
        submit_sum_all(&ctx, &data, &acc, launch).unwrap();
        ctx.flush_window().unwrap();
    }
    assert_eq!(ctx.read::<f64>(&acc.view()).unwrap(), [4444.5]);
    println!("reductions from both nodes: ok");
}

/// Rank side: the differential property over random task streams (fused = unfused = the
/// sequential model) on the two nodes, natively and through the JIT.
#[test]
#[ignore = "runs as a rank of `diffuse launch` (two_ranks_run_random_streams_...)"]
fn rank_streams_match_unfused_and_sequential() {
    let native = run_property(
        cases_from_env("DIFFUSE_DISTRIBUTED_CASES", 64),
        None,
        On::Legion,
    );
    println!("streams checked: native, {} cases", native.cases());
    let (compiled, _) = run_compiled_property(
        cases_from_env("DIFFUSE_DISTRIBUTED_JIT_CASES", 12),
        On::Legion,
    );
    println!("streams checked: compiled, {} cases", compiled.cases());
}
