//! `diffuse launch -n N -- COMMAND ...`: runs a command as the N ranks of one run on this
//! machine, each a Legion node of its own.
//!
//! Every rank gets `DIFFUSE_RANK`, `DIFFUSE_RANKS` and `DIFFUSE_COORDINATOR` (a free local
//! port unless `--coordinator` names one); the Legion backend reads them, joins Realm's UCX
//! network through diffuse's bootstrap plugin and runs the program control replicated. Rank
//! 0's output passes through; the other ranks' standard error is prefixed with their rank and
//! their standard output is dropped unless `--output all` (every rank runs the same program
//! and prints the same results), which prefixes every rank's standard output, rank 0's too. A
//! rank that fails or dies stops the others at once; a rank still running `--grace` seconds
//! after another finished is stopped; a rank that is stopped or hung (alive but silent) is
//! found by the ranks themselves: the bootstrap's heartbeats make the others exit, naming it,
//! after `DIFFUSE_RANK_TIMEOUT` seconds (default 60; `--rank-timeout` sets it for every rank,
//! else the environment's passes through), and the launch then stops it. A launch never hangs on a lost rank.
//! Ranks that are alive and talking but never finish (ranks whose programs diverged, each
//! waiting for the other inside Legion) are stopped at `--time-limit`, when one is given.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

/// What `diffuse launch` was asked to do.
#[derive(Clone, Debug)]
pub struct Launch {
    /// Number of ranks.
    pub ranks: usize,
    /// `host:port` for rank 0's bootstrap; `None` picks a free local port.
    pub coordinator: Option<String>,
    /// Pass every rank's standard output through (prefixed), not only rank 0's.
    pub all_output: bool,
    /// Seconds the other ranks may keep running after one finished.
    pub grace: Duration,
    /// Seconds a rank may stay silent before the others stop the run (`DIFFUSE_RANK_TIMEOUT`
    /// of every rank); `None` leaves the environment's.
    pub rank_timeout: Option<f64>,
    /// Seconds the whole run may take before every rank still running is stopped and the
    /// launch fails with status 124 (as `timeout` does); `None` for no limit.
    pub time_limit: Option<f64>,
    /// The command and its arguments.
    pub command: Vec<String>,
}

/// How a launch ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every rank exited successfully.
    Success,
    /// A rank failed (its exit code, or 1 for a signal) and the rest were stopped.
    Failed {
        /// The exit code the launch returns.
        code: i32,
    },
}

/// Runs `launch` to its end; `Err` when it could not start.
pub fn run(launch: &Launch) -> anyhow::Result<Outcome> {
    if launch.ranks == 0 {
        bail!("-n must be at least 1");
    }
    let Some((program, args)) = launch.command.split_first() else {
        bail!("no command to launch: diffuse launch -n N -- COMMAND [ARGS...]");
    };
    for (flag, seconds) in [
        ("--rank-timeout", launch.rank_timeout),
        ("--time-limit", launch.time_limit),
    ] {
        if let Some(t) = seconds {
            if !(t > 0.0 && t <= 365.0 * 86_400.0) {
                bail!("{flag} {t}: expected a positive number of seconds (at most a year)");
            }
        }
    }
    let deadline = launch
        .time_limit
        .map(|t| (Instant::now() + Duration::from_secs_f64(t), t));
    let coordinator = match &launch.coordinator {
        Some(c) => c.clone(),
        None => format!("127.0.0.1:{}", free_port()?),
    };
    let mut ranks: Vec<Rank> = Vec::with_capacity(launch.ranks);
    for rank in 0..launch.ranks {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env("DIFFUSE_RANK", rank.to_string())
            .env("DIFFUSE_RANKS", launch.ranks.to_string())
            .env("DIFFUSE_COORDINATOR", &coordinator)
            .stdin(Stdio::null());
        if let Some(t) = launch.rank_timeout {
            cmd.env("DIFFUSE_RANK_TIMEOUT", t.to_string());
        }
        if rank > 0 {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        } else if launch.all_output {
            // Whole lines only, so that no other rank's line lands inside one of rank 0's.
            cmd.stdout(Stdio::piped());
        }
        let child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => {
                stop_all(&mut ranks);
                return Err(e).with_context(|| format!("starting rank {rank}: {program}"));
            }
        };
        ranks.push(Rank::new(rank, child, launch.all_output));
    }
    Ok(supervise(&mut ranks, launch.grace, deadline))
}

/// Status of a run stopped at its time limit (that of `timeout`).
pub const TIME_LIMIT_STATUS: i32 = 124;

/// One rank being supervised.
struct Rank {
    rank: usize,
    child: Child,
    status: Option<ExitStatus>,
    forwarders: Vec<std::thread::JoinHandle<()>>,
}

impl Rank {
    /// Starts forwarding a rank's piped output: standard error always, prefixed; standard
    /// output prefixed when `all_output`, else drained.
    fn new(rank: usize, mut child: Child, all_output: bool) -> Self {
        let mut forwarders = Vec::new();
        if let Some(err) = child.stderr.take() {
            forwarders.push(forward(err, rank, false));
        }
        if let Some(out) = child.stdout.take() {
            forwarders.push(if all_output {
                forward(out, rank, true)
            } else {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut { out }, &mut std::io::sink());
                })
            });
        }
        Rank {
            rank,
            child,
            status: None,
            forwarders,
        }
    }
}

/// Copies `from` line by line to stdout or stderr with a `[rank K]` prefix.
fn forward(
    from: impl Read + Send + 'static,
    rank: usize,
    stdout: bool,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            let text = format!("[rank {rank}] {line}\n");
            let _ = if stdout {
                std::io::stdout().lock().write_all(text.as_bytes())
            } else {
                std::io::stderr().lock().write_all(text.as_bytes())
            };
        }
    })
}

/// Waits for every rank; stops the rest when one fails, when some outlive a finished one
/// by more than `grace`, or at the `deadline` (with the limit it came from, in seconds).
fn supervise(ranks: &mut [Rank], grace: Duration, deadline: Option<(Instant, f64)>) -> Outcome {
    let mut first_done: Option<(usize, Instant)> = None;
    loop {
        for r in ranks.iter_mut().filter(|r| r.status.is_none()) {
            if let Ok(Some(status)) = r.child.try_wait() {
                r.status = Some(status);
                if !status.success() {
                    eprintln!(
                        "diffuse launch: rank {} {}; stopping the other ranks",
                        r.rank,
                        describe(status)
                    );
                    stop_all(ranks);
                    return Outcome::Failed {
                        code: status.code().filter(|&c| c != 0).unwrap_or(1),
                    };
                }
                first_done.get_or_insert((r.rank, Instant::now()));
            }
        }
        if ranks.iter().all(|r| r.status.is_some()) {
            join_forwarders(ranks);
            return Outcome::Success;
        }
        if let Some((done, at)) = first_done {
            if at.elapsed() > grace {
                let late = still_running(ranks);
                eprintln!(
                    "diffuse launch: rank {done} finished but rank(s) {} still ran {} s later; \
                     stopping them",
                    late.join(", "),
                    grace.as_secs()
                );
                stop_all(ranks);
                return Outcome::Failed { code: 1 };
            }
        }
        if let Some((at, limit)) = deadline.filter(|(at, _)| Instant::now() >= *at) {
            let running = still_running(ranks);
            eprintln!(
                "diffuse launch: the run passed its time limit of {limit} s ({:.1} s ago) with \
                 rank(s) {} still running; stopping them",
                at.elapsed().as_secs_f64(),
                running.join(", ")
            );
            stop_all(ranks);
            return Outcome::Failed {
                code: TIME_LIMIT_STATUS,
            };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The ranks (their numbers) not finished yet.
fn still_running(ranks: &[Rank]) -> Vec<String> {
    ranks
        .iter()
        .filter(|r| r.status.is_none())
        .map(|r| r.rank.to_string())
        .collect()
}

/// Kills every rank still running and waits for all of them.
fn stop_all(ranks: &mut [Rank]) {
    for r in ranks.iter_mut().filter(|r| r.status.is_none()) {
        let _ = r.child.kill();
        r.status = r.child.wait().ok();
    }
    join_forwarders(ranks);
}

/// Waits for the ranks' output to be forwarded: until each pipe closes, or for at most
/// [`FORWARD_WAIT`] once the ranks are gone (a child a rank started may hold its pipe open
/// long after the rank ended; what it prints later is dropped).
fn join_forwarders(ranks: &mut [Rank]) {
    let deadline = Instant::now() + FORWARD_WAIT;
    for r in ranks.iter_mut() {
        for f in r.forwarders.drain(..) {
            while !f.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if f.is_finished() {
                let _ = f.join();
            }
        }
    }
}

/// How long the ranks' output may still arrive after every rank has ended.
const FORWARD_WAIT: Duration = Duration::from_secs(2);

/// "exited with status 3" or "was killed by signal 9".
fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => "ended abnormally".into(),
    }
}

/// A TCP port free on the loopback interface right now.
fn free_port() -> anyhow::Result<u16> {
    let listener =
        TcpListener::bind("127.0.0.1:0").context("finding a free port for the bootstrap")?;
    Ok(listener.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(ranks: usize, script: &str) -> Launch {
        Launch {
            ranks,
            coordinator: None,
            all_output: false,
            grace: Duration::from_secs(2),
            rank_timeout: None,
            time_limit: None,
            command: vec!["sh".into(), "-c".into(), script.into()],
        }
    }

    #[test]
    fn every_rank_runs_with_its_place() {
        let dir = std::env::temp_dir().join(format!("diffuse-launch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = format!(
            "echo $DIFFUSE_RANK $DIFFUSE_RANKS $DIFFUSE_COORDINATOR $DIFFUSE_RANK_TIMEOUT \
             > {}/$DIFFUSE_RANK",
            dir.display()
        );
        let mut three = launch(3, &script);
        three.rank_timeout = Some(2.5);
        assert_eq!(run(&three).unwrap(), Outcome::Success);
        let places: Vec<String> = (0..3)
            .map(|r| std::fs::read_to_string(dir.join(r.to_string())).unwrap())
            .collect();
        let _ = std::fs::remove_dir_all(&dir);
        for (r, place) in places.iter().enumerate() {
            let fields: Vec<&str> = place.split_whitespace().collect();
            assert_eq!(fields[..2], [r.to_string(), "3".to_string()]);
            assert!(fields[2].starts_with("127.0.0.1:"), "{place}");
            assert_eq!(fields.get(3), Some(&"2.5"), "{place}");
        }
        assert!(places
            .windows(2)
            .all(|w| w[0].split_whitespace().nth(2) == w[1].split_whitespace().nth(2)));
    }

    #[test]
    fn a_failing_rank_stops_the_others_with_its_code() {
        let started = Instant::now();
        let outcome = run(&launch(
            2,
            "if [ $DIFFUSE_RANK = 1 ]; then exit 3; else sleep 30; fi",
        ))
        .unwrap();
        assert_eq!(outcome, Outcome::Failed { code: 3 });
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_rank_outliving_a_finished_one_is_stopped_after_the_grace() {
        let started = Instant::now();
        let outcome = run(&launch(
            2,
            "if [ $DIFFUSE_RANK = 1 ]; then exit 0; else sleep 30; fi",
        ))
        .unwrap();
        assert_eq!(outcome, Outcome::Failed { code: 1 });
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn ranks_running_past_the_time_limit_are_stopped_with_status_124() {
        let started = Instant::now();
        let mut l = launch(2, "sleep 30");
        l.time_limit = Some(1.0);
        assert_eq!(
            run(&l).unwrap(),
            Outcome::Failed {
                code: TIME_LIMIT_STATUS
            }
        );
        assert!(started.elapsed() < Duration::from_secs(10));
        // A run within its limit is untouched.
        let mut l = launch(2, "true");
        l.time_limit = Some(30.0);
        assert_eq!(run(&l).unwrap(), Outcome::Success);
    }

    #[test]
    fn no_command_or_no_ranks_are_errors() {
        let mut l = launch(2, "true");
        l.command.clear();
        assert!(run(&l).unwrap_err().to_string().contains("no command"));
        let l = launch(0, "true");
        assert!(run(&l).unwrap_err().to_string().contains("-n"));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let mut l = launch(1, "true");
            l.rank_timeout = Some(bad);
            let e = run(&l).unwrap_err().to_string();
            assert!(e.contains("--rank-timeout"), "{e}");
            let mut l = launch(1, "true");
            l.time_limit = Some(bad);
            let e = run(&l).unwrap_err().to_string();
            assert!(e.contains("--time-limit"), "{e}");
        }
        let mut l = launch(1, "true");
        l.command = vec!["/nonexistent/diffuse-program".into()];
        assert!(run(&l).unwrap_err().to_string().contains("starting rank 0"));
    }
}
