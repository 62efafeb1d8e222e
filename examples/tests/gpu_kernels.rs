//! Every application on the simulated GPU (`DIFFUSE_DEVICE=sim --gpu`): the same check as on
//! the CPU, point tasks on the GPU, and exactly the kernels the table below expects declined
//! for the GPU (a change that declines one more fails here, as does one that builds one more
//! without updating the table). For the element-wise apps, data stays on the device in steady
//! state: nothing copied either way and one synchronization per iteration; the solvers
//! upload nothing and read back at most their convergence test's scalar.
//!
//! The simulated GPU runs the host version of the kernels the GPU JIT built (PTX for `sm_90`),
//! so the table is the real GPU's.

use std::collections::BTreeSet;
use std::process::Command;

const PROGRAM: &str = env!("CARGO_BIN_EXE_diffuse-examples");

/// An application run: its flags at smoke size, the check's tolerance, and the tasks whose
/// kernel is expected to be declined for the GPU.
struct Case {
    app: &'static str,
    flags: &'static [&'static str],
    tolerance: f64,
    declined: &'static [&'static str],
    /// What may cross between host and device in steady state.
    transfers: Transfers,
}

/// Steady-state traffic between host and device, per iteration.
#[derive(Clone, Copy, PartialEq)]
enum Transfers {
    /// Nothing: the data stays on the device; at most one synchronization.
    Nothing,
    /// No uploads, and at most one scalar read back (the solver's convergence test) with
    /// its synchronization.
    Scalars,
}

/// What runs where today. The random inputs (generated on the host by a counter-based
/// generator with no MLIR body) are set up on the CPUs; everything else, reductions, fused
/// SpMVs and scalar arithmetic included, runs on the GPU.
const CASES: &[Case] = &[
    Case {
        app: "stencil",
        flags: &["--n", "257", "--iters", "3"],
        tolerance: 1e-12,
        declined: &[],
        transfers: Transfers::Nothing,
    },
    Case {
        app: "stencil-ir",
        flags: &["--n", "257", "--iters", "3"],
        tolerance: 1e-12,
        declined: &[],
        transfers: Transfers::Nothing,
    },
    Case {
        app: "black-scholes",
        flags: &["--n", "100000", "--iters", "2"],
        tolerance: 1e-12,
        declined: RANDOM_INPUTS,
        transfers: Transfers::Nothing,
    },
    Case {
        app: "black-scholes-poly",
        flags: &["--n", "100000", "--iters", "2"],
        tolerance: 1e-12,
        declined: RANDOM_INPUTS,
        transfers: Transfers::Nothing,
    },
    Case {
        app: "jacobi",
        flags: &["--n", "500", "--iters", "5"],
        tolerance: 1e-9,
        declined: &["array.random_uniform.f64"],
        transfers: Transfers::Nothing,
    },
    Case {
        app: "cfd",
        flags: &["--n", "41", "--iters", "3"],
        tolerance: 1e-9,
        declined: &[],
        transfers: Transfers::Nothing,
    },
    Case {
        app: "cg",
        flags: &["--n", "40", "--iters", "1000"],
        tolerance: 1e-7,
        declined: &[],
        transfers: Transfers::Scalars,
    },
    Case {
        app: "bicgstab",
        flags: &["--n", "40", "--iters", "1000"],
        tolerance: 1e-7,
        declined: &[],
        transfers: Transfers::Scalars,
    },
    Case {
        app: "cgs",
        flags: &["--n", "40", "--iters", "1000"],
        tolerance: 1e-7,
        declined: &[],
        transfers: Transfers::Scalars,
    },
    Case {
        app: "gmg",
        flags: &["--n", "63", "--iters", "1000"],
        tolerance: 1e-7,
        declined: &[],
        transfers: Transfers::Scalars,
    },
];

/// Black-Scholes' three random inputs, generated once before the iterations.
const RANDOM_INPUTS: &[&str] =
    &["array.random_uniform.f64+array.random_uniform.f64+array.random_uniform.f64"];

fn run(case: &Case) -> (serde_json::Value, String) {
    let output = Command::new(PROGRAM)
        .arg(case.app)
        .args(case.flags)
        .args(["--procs", "2", "--gpu", "--jit", "sync", "--json"])
        .env("DIFFUSE_DEVICE", "sim")
        .output()
        .expect("the app runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{} failed: {stderr}", case.app);
    let record = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{}: no JSON record ({e}): {stderr}", case.app));
    (record, stderr)
}

#[test]
fn every_app_runs_on_the_simulated_gpu_with_the_expected_kernels() {
    let mut failures = Vec::new();
    for case in CASES {
        let (r, stderr) = run(case);
        let number = |key: &str| r[key].as_f64().unwrap_or(f64::NAN);
        let check = number("check");
        assert!(
            check <= case.tolerance,
            "{}: check {check} above {}",
            case.app,
            case.tolerance
        );
        assert!(
            number("gpu_points") > 0.0,
            "{}: nothing ran on the GPU",
            case.app
        );
        assert!(
            !stderr.contains("GPU launch") && !stderr.contains("no GPU on this machine"),
            "{}: {stderr}",
            case.app
        );
        let declined: BTreeSet<String> = r["gpu_kernels_declined"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        let expected: BTreeSet<String> = case.declined.iter().map(|s| s.to_string()).collect();
        if declined != expected {
            failures.push(format!(
                "{}: declined for the GPU now {:?}, expected {:?} (newly declined: {:?}; newly \
                 built: {:?}; reasons: {})",
                case.app,
                declined,
                expected,
                declined.difference(&expected).collect::<Vec<_>>(),
                expected.difference(&declined).collect::<Vec<_>>(),
                r["gpu_kernels_declined"]
            ));
        }
        let (read_back, syncs) = match case.transfers {
            Transfers::Nothing => (0.0, 1.0),
            Transfers::Scalars => (8.0, 1.0),
        };
        assert_eq!(
            number("h2d_bytes_per_iter"),
            0.0,
            "{}: uploads in steady state",
            case.app
        );
        assert!(
            number("d2h_bytes_per_iter") <= read_back,
            "{}: {} bytes read back per iteration",
            case.app,
            number("d2h_bytes_per_iter")
        );
        assert!(
            number("device_syncs_per_iter") <= syncs,
            "{}: {} syncs per iteration",
            case.app,
            number("device_syncs_per_iter")
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
