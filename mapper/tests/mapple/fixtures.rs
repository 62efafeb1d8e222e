//! Every example mapper of the two sources parses.

use crate::common::{fixture, fixtures};
use diffuse_mapper::ast::{ExprKind, FuncStmtKind, StmtKind};
use diffuse_mapper::parse::parse;

/// The fixtures that must exist (so that a lost file is noticed).
const EXPECTED: &[&str] = &[
    "manual_auto_split_solomonik.mapple",
    "manual_block1d.mapple",
    "manual_circuit.mapple",
    "manual_collect_memory.mapple",
    "manual_cyclic1d.mapple",
    "manual_hierarchicalblock1d.mapple",
    "manual_instance_limit.mapple",
    "manual_layout.mapple",
    "manual_merge_dim.mapple",
    "manual_merge_solomonik.mapple",
    "manual_print.mapple",
    "manual_region_index.mapple",
    "manual_region_semantic.mapple",
    "manual_same_node.mapple",
    "manual_same_point.mapple",
    "manual_task.mapple",
    "manual_transformations.mapple",
    "paper_fig1a_block2d.mapple",
    "paper_fig_a1b_cannon.mapple",
    "paper_fig_a1b_cannon_reindented.mapple",
    "paper_inline_snippets.mapple",
    "reconstructed_fig3_block2D.mapple",
    "reconstructed_layout_choices.mapple",
];

#[test]
fn all_expected_fixtures_exist() {
    let names: Vec<String> = fixtures().into_iter().map(|(n, _)| n).collect();
    for want in EXPECTED {
        assert!(names.iter().any(|n| n == want), "missing fixture {want}");
    }
}

#[test]
fn every_fixture_parses() {
    let all = fixtures();
    assert!(all.len() >= EXPECTED.len());
    for (name, text) in &all {
        match parse(name, text) {
            Ok(prog) => assert!(!prog.stmts.is_empty(), "{name}: no statements"),
            Err(e) => panic!("{e}"),
        }
    }
}

/// Printing a parsed program gives canonical Mapple that parses back to a program printing
/// the same way.
#[test]
fn printing_is_a_fixed_point() {
    for (name, text) in fixtures() {
        let once = parse(&name, &text)
            .unwrap_or_else(|e| panic!("{e}"))
            .to_string();
        let again = parse(&name, &once)
            .unwrap_or_else(|e| panic!("{e}\n--- printed ---\n{once}"))
            .to_string();
        assert_eq!(once, again, "{name}");
    }
}

/// Both the indentation-only Figure A1(b) (line numbers stripped) and the re-indented copy
/// give the same program.
#[test]
fn cannon_variants_agree() {
    let a = parse("a", &fixture("paper_fig_a1b_cannon.mapple")).unwrap();
    let b = parse("b", &fixture("paper_fig_a1b_cannon_reindented.mapple")).unwrap();
    assert_eq!(a.to_string(), b.to_string());
    assert_eq!(a.stmts.len(), 6);
    let StmtKind::FuncDef(def) = &a.stmts[0].kind else {
        panic!("first statement is the block function");
    };
    assert_eq!(def.name.name, "block");
    assert_eq!(def.body.len(), 8);
    let FuncStmtKind::Return(ret) = &def.body[7].kind else {
        panic!("last body statement is the return");
    };
    let ExprKind::Index { indices, .. } = &ret.kind else {
        panic!("return indexes m4d");
    };
    assert!(indices
        .iter()
        .all(|i| matches!(i.kind, ExprKind::Unpack(_))));
    // The multi-line tuple of lines 14-15 is one statement.
    assert_eq!(def.body[5].span.line, 14);
    assert_eq!(def.body[6].span.line, 16);
}

#[test]
fn statement_counts() {
    let counts = [
        ("manual_circuit.mapple", 6),
        ("manual_auto_split_solomonik.mapple", 5),
        ("manual_transformations.mapple", 7),
        ("paper_fig1a_block2d.mapple", 7),
        ("manual_region_semantic.mapple", 4),
    ];
    for (name, n) in counts {
        let prog = parse(name, &fixture(name)).unwrap();
        assert_eq!(prog.stmts.len(), n, "{name}");
    }
}
