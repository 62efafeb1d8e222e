//! Fuzz of `diffuse-figures`: every subcommand with missing, empty, garbage and extreme
//! record files, unwritable outputs, and a stdout that is full, closed or a pipe without a
//! reader. No run may crash, hang or fail without one `error:` line (see
//! `tests/cli/harness.rs`).

#[path = "../../tests/cli/harness.rs"]
mod harness;

use std::time::Duration;

use harness::{run_all, Stdout};

const PROGRAM: &str = env!("CARGO_BIN_EXE_diffuse-figures");

/// One app record as the apps print it, with `seconds` per iteration.
fn record(app: &str, nodes: &str, seconds: &str) -> String {
    format!(
        "{{\"app\":\"{app}\",\"n\":8,\"nodes\":{nodes},\"fusion\":\"on\",\"jit\":\"sync\",\
         \"seconds_per_iter\":{seconds},\"tasks_issued_per_iter\":6,\"tasks_executed_per_iter\":2}}\n"
    )
}

#[test]
fn no_input_crashes_or_hangs_the_figures() {
    let dir = harness::scratch_dir("diffuse-figures-fuzz");
    let write = |name: &str, text: &str| harness::write_file(&dir, name, text);
    let valid = write(
        "valid.jsonl",
        &[
            record("stencil", "1", "0.01"),
            record("stencil", "2", "0.012"),
        ]
        .concat(),
    );
    let records = vec![
        valid.clone(),
        harness::arg_in(&dir, "missing.jsonl"),
        dir.display().to_string(),
        write("empty.jsonl", ""),
        write("garbage.jsonl", "\u{0}{{{ not json\n"),
        write(
            "extreme.jsonl",
            &[
                record("stencil", "0", "0"),
                record("stencil", "18446744073709551615", "1e308"),
                record("", "1", "-1"),
                record("cg", "1", "1e-320"),
            ]
            .concat(),
        ),
        write(
            "kernels.jsonl",
            "{\"kernel\":\"gemm\",\"class\":\"dense\",\"size\":\"small\",\"speedup\":0.5,\"valid\":true}\n\
             {\"kernel\":\"gemm\",\"class\":\"dense\",\"size\":\"huge\",\"speedup\":1e308,\"valid\":false}\n\
             {\"kernel\":\"\",\"class\":\"\",\"size\":\"small\",\"speedup\":-1,\"valid\":true}\n\
             {\"kernel\":\"lu\",\"class\":\"x\",\"size\":\"large\",\"speedup\":1e-320,\"valid\":true}\n",
        ),
        write(
            "wrong-types.jsonl",
            "{\"app\":1,\"n\":-1,\"seconds_per_iter\":\"x\"}\n",
        ),
    ];
    let outputs = |name: &str| {
        vec![
            harness::arg_in(&dir, name),
            "/dev/full".to_string(),
            dir.display().to_string(),
            "/nonexistent/dir/out".to_string(),
        ]
    };
    let mut cases = Vec::new();
    for file in &records {
        for svg in outputs("ws.svg") {
            let args = ["weak-scaling", file, "--svg", &svg, "--markdown"];
            let mut args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            args.push(harness::arg_in(&dir, "ws.md"));
            cases.push((args, Stdout::Null));
        }
        for md in outputs("ws.md") {
            let svg = harness::arg_in(&dir, "ws2.svg");
            let args = ["weak-scaling", file, "--svg", &svg, "--markdown", &md];
            cases.push((args.iter().map(|s| s.to_string()).collect(), Stdout::Null));
        }
        for out in outputs("peers") {
            let args = ["peers", file, "--out", &out];
            cases.push((args.iter().map(|s| s.to_string()).collect(), Stdout::Null));
        }
        for out in outputs("kernels") {
            let args = ["kernels", file, "--out", &out];
            cases.push((args.iter().map(|s| s.to_string()).collect(), Stdout::Null));
        }
    }
    for stdout in [Stdout::Full, Stdout::Closed, Stdout::BrokenPipe] {
        let (svg, md) = (dir.join("s.svg"), dir.join("s.md"));
        let args = [
            "weak-scaling",
            &valid,
            "--svg",
            &svg.display().to_string(),
            "--markdown",
            &md.display().to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        cases.push((args, stdout));
    }
    run_all(PROGRAM, cases, Duration::from_secs(60), 2);
    std::fs::remove_dir_all(dir).unwrap();
}
