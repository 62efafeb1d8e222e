//! Fuzz of the `diffuse` command line: `mapple check`, `mapple show` and `launch` with
//! extreme values (0, -1, huge, 2^64, empty, garbage, missing files and directories), and
//! runs whose stdout is full, closed or a pipe without a reader. No run may crash, hang or
//! fail without one `error:` line (see `tests/cli/harness.rs`, also used by
//! `diffuse-examples`' fuzz test).
//!
//! `DIFFUSE_FUZZ_RUNS=2000 DIFFUSE_FUZZ_SEED=...` runs more random cases, or replays a seed.

#[path = "cli/harness.rs"]
mod harness;

use std::time::Duration;

use harness::{judge, random_runs, run, run_all, Random, Stdout};

const PROGRAM: &str = env!("CARGO_BIN_EXE_diffuse");

/// The harness itself: each way a run can go wrong is caught (so the fuzz tests can fail).
#[test]
fn the_harness_catches_crashes_hangs_and_unclear_failures() {
    let sh = |script: &str, limit: u64| {
        let args = vec!["-c".to_string(), script.to_string()];
        judge(&run("sh", &args, Stdout::Null, Duration::from_secs(limit)))
    };
    assert!(sh("exit 101", 10).unwrap().contains("crashed"));
    assert!(sh("exit 134", 10).unwrap().contains("crashed"));
    assert!(sh("kill -9 $$", 10).unwrap().contains("signal 9"));
    assert!(sh("sleep 30", 1).unwrap().contains("hung"));
    assert!(sh("echo oops >&2; exit 1", 10).is_some());
    assert!(sh("echo 'error: a' >&2; echo 'error: b' >&2; exit 1", 10).is_some());
    assert!(sh("echo \"thread 'main' panicked\" >&2; exit 0", 10).is_some());
    assert_eq!(
        sh("echo 'error: --n must be at least 1' >&2; exit 1", 10),
        None
    );
    assert_eq!(sh("echo ok", 10), None);
    // A write to a pipe nobody reads fails (the shell ignores nothing: it dies of SIGPIPE,
    // which the harness reports as a signal).
    let args = vec!["-c".to_string(), "sleep 0.2; echo ok".to_string()];
    let outcome = run("sh", &args, Stdout::BrokenPipe, Duration::from_secs(10));
    assert_eq!(outcome.signal, Some(13), "{outcome:?}");
}

fn fixture(name: &str) -> String {
    format!(
        "{}/mapper/tests/mapple/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Mapper files: valid ones, missing, a directory, empty, garbage.
fn files(dir: &std::path::Path) -> Vec<String> {
    let write = |name: &str, text: &str| harness::write_file(dir, name, text);
    vec![
        fixture("reconstructed_fig3_block2D.mapple"),
        fixture("reference_grammar.mapple"),
        harness::arg_in(dir, "missing.mapple"),
        dir.display().to_string(),
        write("empty.mapple", ""),
        write(
            "garbage.mapple",
            "\u{0}(((\nTask * GPU;;\n\u{7f}m = Machine(GPU",
        ),
    ]
}

const MACHINES: [&str; 11] = [
    "2x2",
    "1x1",
    "0x0",
    "0x4",
    "-1x2",
    "4294967296x4294967296",
    "18446744073709551616x1",
    "2x2x2",
    "x",
    "",
    "garbage",
];

const ISPACES: [&str; 11] = [
    "6,6",
    "1",
    "0",
    "-1",
    "1048576",
    "1048577",
    "9223372036854775807,2",
    "1,1,1,1,1,1,1,1,1",
    "",
    "x",
    "6,,6",
];

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// `mapple show` with `overrides` in place of a valid call's flags.
fn show(file: &str, overrides: &[(&str, String)]) -> Vec<String> {
    harness::with_overrides(
        &["mapple", "show", file],
        &[("--task", "tiles"), ("--ispace", "6,6")],
        overrides,
    )
}

#[test]
fn no_argument_crashes_or_hangs_the_diffuse_command() {
    let dir = harness::scratch_dir("diffuse-cli-fuzz");
    let files = files(&dir);
    let svg = harness::arg_in(&dir, "out.svg");
    let outs = vec![
        svg,
        "/dev/full".to_string(),
        dir.display().to_string(),
        "/nonexistent/dir/out.svg".to_string(),
        String::new(),
    ];
    let show_flags: Vec<(&str, Vec<String>)> = vec![
        ("--task", strings(&["tiles", "", "nonexistent", "\u{1}"])),
        ("--ispace", strings(&ISPACES)),
        ("--machine", strings(&MACHINES)),
        ("--out", outs),
    ];
    let mut cases = Vec::new();
    for file in &files {
        for machine in MACHINES {
            let check = |explain: bool| {
                let mut a = strings(&["mapple", "check", file]);
                a.push(format!("--machine={machine}"));
                if explain {
                    a.push("--explain".into());
                }
                a
            };
            cases.push((check(false), Stdout::Null));
            cases.push((check(true), Stdout::Null));
        }
        for (flag, values) in &show_flags {
            for value in values {
                cases.push((show(file, &[(flag, value.clone())]), Stdout::Null));
            }
        }
    }
    // Successful runs with nowhere to write their result.
    let valid = fixture("reconstructed_fig3_block2D.mapple");
    for stdout in [Stdout::Full, Stdout::Closed, Stdout::BrokenPipe] {
        cases.push((show(&valid, &[]), stdout));
        cases.push((show(&valid, &[("--json", "true".into())]), stdout));
        cases.push((show(&valid, &[("--ispace", "1024,1024".into())]), stdout));
        cases.push((strings(&["mapple", "check", &valid, "--explain"]), stdout));
    }
    // `launch`'s own flags (its exit status is a rank's, and its messages about ranks are
    // the launcher's; commands here only start or fail to start).
    for ranks in [
        "0",
        "-1",
        "1",
        "",
        "x",
        "1000000000000000",
        "18446744073709551615",
        "18446744073709551616",
    ] {
        cases.push((
            strings(&["launch", &format!("-n={ranks}"), "--", "true"]),
            Stdout::Null,
        ));
    }
    for (flag, value) in [
        ("--grace", "18446744073709551615"),
        ("--grace", "-1"),
        ("--grace", "nan"),
        ("--coordinator", "garbage"),
        ("--coordinator", ""),
        ("--coordinator", "256.0.0.1:99999"),
        ("--output", "garbage"),
    ] {
        cases.push((
            strings(&["launch", "-n=1", &format!("{flag}={value}"), "--", "true"]),
            Stdout::Null,
        ));
    }
    cases.push((
        strings(&["launch", "-n=2", "--", "/nonexistent"]),
        Stdout::Null,
    ));
    cases.push((strings(&["launch", "-n=1"]), Stdout::Null));
    // Random combinations of a few `mapple show` flags.
    let (mut random, seed) = Random::from_env();
    let runs = random_runs(40);
    println!("random cases: {runs}, seed {seed} (DIFFUSE_FUZZ_SEED to replay)");
    for _ in 0..runs {
        let file = random.pick(&files).clone();
        let mut overrides = Vec::new();
        for _ in 0..1 + random.next() % 3 {
            let (flag, values) = random.pick(&show_flags);
            overrides.push((*flag, random.pick(values).clone()));
        }
        let stdout = *random.pick(&[Stdout::Null, Stdout::Full, Stdout::BrokenPipe]);
        cases.push((show(&file, &overrides), stdout));
    }
    run_all(PROGRAM, cases, Duration::from_secs(60), 2);
    std::fs::remove_dir_all(dir).unwrap();
}
