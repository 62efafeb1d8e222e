//! Properties: block mappers land on valid processors and are balanced; evaluating mutated
//! fixtures never panics.

use std::collections::HashMap;

use crate::common::{fixtures, machine, mapper};
use diffuse_mapper::ast::{StmtKind, TaskSel};
use diffuse_mapper::machine::Processor;
use diffuse_mapper::parse::parse;
use diffuse_mapper::placement::Mapper;
use proptest::prelude::*;
use proptest::test_runner::Config;

/// Figure 3's block mapping (tuple form).
const BLOCK2D: &str = "m = Machine(GPU);\n\
    def block2D(Task task) {\n\
        idx = task.ipoint * m.size / task.ispace;\n\
        return m[*idx];\n\
    }\n\
    IndexTaskMap tiles block2D;";

/// A 1-D block mapping over all processors (merged space).
const BLOCK1D: &str = "m = Machine(GPU).merge(1, 0);\n\
    def block1d(Task task) {\n\
        return m[task.ipoint[0] * m.size[0] / task.ispace[0]];\n\
    }\n\
    IndexTaskMap line block1d;";

fn counts(points: impl Iterator<Item = Processor>) -> HashMap<Processor, u64> {
    let mut c = HashMap::new();
    for p in points {
        *c.entry(p).or_insert(0u64) += 1;
    }
    c
}

/// Every point of a launch, row-major.
fn all_points(launch: &[i64]) -> Vec<Vec<i64>> {
    let mut out = vec![Vec::new()];
    for &e in launch {
        out = out
            .into_iter()
            .flat_map(|p| {
                (0..e).map(move |x| {
                    let mut q = p.clone();
                    q.push(x);
                    q
                })
            })
            .collect();
    }
    out
}

proptest! {
    #![proptest_config(Config { cases: 64, failure_persistence: None, ..Config::default() })]

    #[test]
    fn block2d_places_points_validly_and_balanced(
        nodes in 1usize..5, per in 1usize..5, a in 1i64..25, b in 1i64..25,
        probe in (0i64..1000, 0i64..1000),
    ) {
        let m = mapper(BLOCK2D, machine(nodes, per));
        let launch = [a, b];
        let point = [probe.0 % a, probe.1 % b];
        let p = m.place("tiles", &point, &launch).unwrap();
        prop_assert!(p.node < nodes && p.index < per);
        let c = counts(all_points(&launch).iter().map(|q| m.place("tiles", q, &launch).unwrap()));
        // Per dimension a block mapping gives each row/column of processors floor or ceil of
        // the extent over the processor count, so a processor's share lies between the
        // products of those.
        let (n, q) = (nodes as i64, per as i64);
        let lo = (a / n) * (b / q);
        let hi = ((a + n - 1) / n) * ((b + q - 1) / q);
        for (proc, k) in &c {
            prop_assert!(proc.node < nodes && proc.index < per);
            prop_assert!((lo as u64..=hi as u64).contains(k), "{proc}: {k} not in {lo}..={hi}");
        }
        prop_assert_eq!(c.values().sum::<u64>(), (a * b) as u64);
    }

    #[test]
    fn block1d_is_balanced_within_the_remainder(
        nodes in 1usize..5, per in 1usize..5, n in 1i64..100,
    ) {
        let m = mapper(BLOCK1D, machine(nodes, per));
        let c = counts((0..n).map(|i| m.place("line", &[i], &[n]).unwrap()));
        let procs = (nodes * per) as i64;
        // Every processor gets floor(n / P) or ceil(n / P) points; all are used when n >= P.
        let (lo, hi) = ((n / procs) as u64, ((n + procs - 1) / procs) as u64);
        for (proc, k) in &c {
            prop_assert!(proc.node < nodes && proc.index < per);
            prop_assert!(*k >= lo.max(1) && *k <= hi);
        }
        if n >= procs {
            prop_assert_eq!(c.len() as i64, procs);
        }
    }

    #[test]
    fn default_block_mapping_is_valid_and_balanced(
        nodes in 1usize..5, per in 1usize..5,
        launch in proptest::collection::vec(1i64..7, 0..4),
    ) {
        let m = mapper("", machine(nodes, per));
        let points = all_points(&launch);
        let c = counts(points.iter().map(|q| m.place("t", q, &launch).unwrap()));
        let total = points.len() as u64;
        let procs = (nodes * per) as u64;
        let (lo, hi) = (total / procs, total.div_ceil(procs));
        for (proc, k) in &c {
            prop_assert!(proc.node < nodes && proc.index < per);
            prop_assert!(*k >= lo.max(1) && *k <= hi);
        }
        // Blocks are contiguous: linear order of points never goes back to a lower processor.
        let order: Vec<usize> = points
            .iter()
            .map(|q| {
                let p = m.place("t", q, &launch).unwrap();
                p.node * per + p.index
            })
            .collect();
        prop_assert!(order.windows(2).all(|w| w[0] <= w[1]));
    }
}

// ---------------------------------------------------------------------------------------------
// Fuzz: evaluating whatever parses never panics.
// ---------------------------------------------------------------------------------------------

fn fuzz_cases() -> u32 {
    std::env::var("MAPPLE_EVAL_FUZZ_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(300)
}

/// Pieces inserted by the mutations: characters and tokens that change what evaluates.
const PIECES: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "7",
    "(",
    ")",
    "[",
    "]",
    ",",
    ":",
    "*",
    "+",
    "-",
    "/",
    "%",
    "?",
    "!",
    "<",
    "==",
    "&&",
    "||",
    ".",
    "m",
    "task",
    "ipoint",
    "ispace",
    "parent",
    "size",
    "split(0, 2)",
    "merge(0, 1)",
    "swap(0, 1)",
    "slice(0, 0, 0)",
    "reverse(1)",
    "balance_split(1, 2)",
    "auto_split(0, (2, 2))",
    "decompose(1, (4, 4))",
    "processor(m)",
    "Machine(GPU)",
    "Machine(CPU)",
    "len(",
    "tuple(",
    " for i in (0, 1)",
    "f(",
    "*(1, 2)",
    "9223372036854775807",
    "\n",
    ";",
    "print(\"{}\", ",
    "return ",
    "\ndef f(int n) { return f(n + 1); }\nx = f(0);\n",
    "\ndef g(Task t) { return g(t); }\nIndexTaskMap tiles g;\n",
    "IndexTaskMap * ",
    "\nt = (1, 2);\nt = (t, t);\nt = (t, t);\nt = (*t, *t);\n",
];

#[derive(Debug, Clone)]
enum Mutation {
    Delete(usize, usize),
    Insert(usize, usize),
    Replace(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1usize..6).prop_map(|(p, n)| Mutation::Delete(p, n)),
        (any::<usize>(), any::<usize>()).prop_map(|(p, w)| Mutation::Insert(p, w)),
        (any::<usize>(), any::<usize>()).prop_map(|(p, w)| Mutation::Replace(p, w)),
    ]
}

fn apply(text: &str, muts: &[Mutation]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for m in muts {
        let len = chars.len();
        match *m {
            Mutation::Delete(p, n) if len > 0 => {
                let s = p % len;
                chars.drain(s..(s + n).min(len));
            }
            Mutation::Insert(p, w) => {
                let piece = PIECES[w % PIECES.len()];
                let at = p % (len + 1);
                chars.splice(at..at, piece.chars());
            }
            Mutation::Replace(p, w) if len > 0 => {
                let piece = PIECES[w % PIECES.len()];
                let at = p % len;
                chars.splice(at..at + 1, piece.chars());
            }
            _ => {}
        }
    }
    chars.into_iter().collect()
}

/// The task names a program's map statements mention, plus one no statement names.
fn task_names(src: &str) -> Vec<String> {
    let mut names = vec!["unnamed".to_string()];
    if let Ok(prog) = parse("f.mapple", src) {
        for s in &prog.stmts {
            if let StmtKind::IndexTaskMap(m) | StmtKind::SingleTaskMap(m) = &s.kind {
                for t in &m.tasks {
                    if let TaskSel::Named(id) = t {
                        names.push(id.name.clone());
                    }
                }
            }
        }
    }
    names
}

fn exercise(src: &str) {
    let Ok(m) = Mapper::from_source("f.mapple", src, machine(2, 4)) else {
        return;
    };
    for name in task_names(src) {
        for (point, launch) in [
            (&[][..], &[][..]),
            (&[3][..], &[8][..]),
            (&[2, 3][..], &[4, 4][..]),
            (&[1, 0, 1][..], &[2, 2, 2][..]),
        ] {
            if let Ok(p) = m.place(&name, point, launch) {
                assert!(p.node < 2 && p.index < 4, "{p}");
            }
            let _ = m.place_with_parent(&name, point, launch, crate::common::gpu(1, 3));
        }
    }
    let _ = m.take_output();
}

fn fixture_texts() -> &'static [String] {
    static TEXTS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    TEXTS.get_or_init(|| {
        let mut t: Vec<String> = fixtures().into_iter().map(|(_, t)| t).collect();
        // The snippets that need `mgpu`/`m_2d` also run with them defined.
        t.push(format!(
            "mgpu = Machine(GPU);\nm_2d = mgpu;\n{}",
            t.join("\n")
        ));
        t
    })
}

proptest! {
    #![proptest_config(Config {
        cases: fuzz_cases(),
        failure_persistence: None,
        max_shrink_iters: 1_000,
        ..Config::default()
    })]

    #[test]
    fn evaluating_mutated_fixtures_never_panics(
        which in any::<usize>(),
        muts in proptest::collection::vec(mutation(), 0..6),
    ) {
        let texts = fixture_texts();
        let src = apply(&texts[which % texts.len()], &muts);
        exercise(&src);
    }
}

#[test]
fn every_fixture_evaluates_without_panicking() {
    for text in fixture_texts() {
        exercise(text);
    }
}
