//! Fuzz of `diffuse-examples`: every application's flags with extreme values (0, -1, huge,
//! 2^64, nan, empty, garbage, missing and malformed files), and runs whose stdout is full,
//! closed or a pipe without a reader. No run may crash, hang or fail without one `error:`
//! line (see `tests/cli/harness.rs`).
//!
//! CI runs the fixed worst cases and a few random combinations (seed printed);
//! `DIFFUSE_FUZZ_RUNS=2000 DIFFUSE_FUZZ_SEED=...` runs more, or replays a seed.

#[path = "../../tests/cli/harness.rs"]
mod harness;

use std::time::Duration;

use harness::{random_runs, run_all, Random, Stdout};

const PROGRAM: &str = env!("CARGO_BIN_EXE_diffuse-examples");

const APPS: [&str; 10] = [
    "stencil",
    "stencil-ir",
    "black-scholes",
    "black-scholes-poly",
    "jacobi",
    "cfd",
    "cg",
    "bicgstab",
    "cgs",
    "gmg",
];

const SOLVERS: [&str; 4] = ["cg", "bicgstab", "cgs", "gmg"];

/// Extreme values for a number-valued flag.
const NUMBERS: [&str; 11] = [
    "0",
    "-1",
    "1",
    "3",
    "1073741824",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "nan",
    "",
    "x7",
];

/// Files for flags that take one: missing, a directory, empty, garbage.
fn files(dir: &std::path::Path) -> Vec<String> {
    let write = |name: &str, text: &str| harness::write_file(dir, name, text);
    vec![
        harness::arg_in(dir, "missing"),
        dir.display().to_string(),
        write("empty", ""),
        write("garbage", "\u{0}\u{1}%%MatrixMarket ((( Task * GPU;;\n\u{7f}"),
        // A header promising a huge matrix with few entries; one with NaN entries.
        write(
            "huge.mtx",
            "%%MatrixMarket matrix coordinate real general\n2000000000 2000000000 2\n1 1 1\n2 2 1\n",
        ),
        write(
            "nan.mtx",
            "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 nan\n2 2 inf\n",
        ),
        // Singular and indefinite: every method divides by zero at some point.
        write(
            "singular.mtx",
            "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2 -1\n",
        ),
        write("zero.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 0\n"),
        // Valid mappers (as --matrix: a file of the wrong kind).
        format!(
            "{}/../mapper/tests/mapple/fixtures/reference_grammar.mapple",
            env!("CARGO_MANIFEST_DIR")
        ),
        format!(
            "{}/../mapper/tests/mapple/fixtures/manual_block1d.mapple",
            env!("CARGO_MANIFEST_DIR")
        ),
    ]
}

/// Each flag an app takes, with the values to try.
fn flags(app: &str, files: &[String]) -> Vec<(&'static str, Vec<String>)> {
    let numbers = || NUMBERS.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let words = |w: &[&str]| {
        w.iter()
            .map(|s| s.to_string())
            .chain(["".to_string(), "garbage".to_string()])
            .collect::<Vec<_>>()
    };
    let mut all = vec![
        ("--n", numbers()),
        ("--iters", numbers()),
        ("--window", numbers()),
        ("--nodes", numbers()),
        ("--procs", numbers()),
        ("--strip-bytes", numbers()),
        (
            "--memory-limit",
            [numbers(), words(&["1K", "64M", "16777216T", "0G"])].concat(),
        ),
        ("--mapper", files.to_vec()),
        ("--fusion", words(&["on", "off"])),
        ("--jit", words(&["on", "sync", "off"])),
        ("--jit-wait", words(&["true", "false"])),
        // Legion's own limits are checked before it starts.
        ("--backend", words(&["embedded", "legion"])),
    ];
    if SOLVERS.contains(&app) {
        all.extend([
            ("--check-every", numbers()),
            (
                "--rtol",
                [numbers(), words(&["inf", "-0", "1e-300", "1e300"])].concat(),
            ),
            ("--matrix", files.to_vec()),
            ("--restriction", words(&["injection", "full-weighting"])),
        ]);
    }
    all
}

/// The arguments of a small run of `app` with `overrides` in place of the defaults: the
/// smallest size the app takes, one iteration, native kernels (a compile per run would cost
/// more than the run), and a memory limit that refuses what is large long before the
/// machine would.
fn args(app: &str, overrides: &[(&str, String)]) -> Vec<String> {
    let n = match app {
        "cfd" | "gmg" => "3",
        _ => "2",
    };
    harness::with_overrides(
        &[app],
        &[
            ("--n", n),
            ("--iters", "1"),
            ("--jit", "off"),
            ("--memory-limit", "256M"),
            ("--procs", "2"),
        ],
        overrides,
    )
}

#[test]
fn no_flag_value_crashes_or_hangs_any_app() {
    let dir = harness::scratch_dir("diffuse-cli-fuzz");
    let files = files(&dir);
    let mut cases = Vec::new();
    // Every flag of every app with every extreme value, one at a time.
    for app in APPS {
        for (flag, values) in flags(app, &files) {
            for value in values {
                cases.push((args(app, &[(flag, value)]), Stdout::Null));
            }
        }
        cases.push((args(app, &[("--gpu", "true".into())]), Stdout::Null));
        // A run that succeeds, with nowhere to write its result.
        for stdout in [Stdout::Full, Stdout::Closed, Stdout::BrokenPipe] {
            cases.push((args(app, &[]), stdout));
            cases.push((args(app, &[("--json", "true".into())]), stdout));
        }
    }
    // Random combinations of a few flags.
    let (mut random, seed) = Random::from_env();
    let runs = random_runs(40);
    println!("random cases: {runs}, seed {seed} (DIFFUSE_FUZZ_SEED to replay)");
    for _ in 0..runs {
        let app = *random.pick(&APPS);
        let all = flags(app, &files);
        let mut overrides = Vec::new();
        for _ in 0..1 + random.next() % 3 {
            let (flag, values) = random.pick(&all);
            overrides.push((*flag, random.pick(values).clone()));
        }
        // --rtol 0 asks for every one of --iters iterations: with a huge --iters that is a
        // run as long as asked, not a hang.
        let exact = overrides.iter().any(|(f, v)| *f == "--rtol" && v == "0");
        let long = overrides
            .iter()
            .any(|(f, v)| *f == "--iters" && v.len() > 2 && v.parse::<u64>().is_ok());
        if exact && long {
            continue;
        }
        let stdout = *random.pick(&[Stdout::Null, Stdout::Null, Stdout::Full, Stdout::BrokenPipe]);
        cases.push((args(app, &overrides), stdout));
    }
    run_all(PROGRAM, cases, Duration::from_secs(60), 2);
    std::fs::remove_dir_all(dir).unwrap();
}
