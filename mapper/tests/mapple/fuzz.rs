//! Fuzzing: the parser never panics, whatever the input, and whatever parses prints to text
//! that parses back to the same printed program.
//!
//! Three properties, each run `MAPPLE_FUZZ_CASES` times (default 700, so ~2,100 cases in CI):
//! random byte strings, random token soups, and random mutations (delete / insert / replace
//! characters) of the fixtures. For the long local run:
//!
//! ```text
//! MAPPLE_FUZZ_CASES=333334 cargo test --release -p diffuse-mapper --test mapple fuzz
//! ```

use crate::common::fixtures;
use diffuse_mapper::parse::parse;
use proptest::prelude::*;
use proptest::test_runner::Config;
use std::sync::OnceLock;

fn cases() -> u32 {
    std::env::var("MAPPLE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(700)
}

fn config() -> Config {
    Config {
        cases: cases(),
        failure_persistence: None,
        max_shrink_iters: 2_000,
        ..Config::default()
    }
}

fn fixture_texts() -> &'static [String] {
    static TEXTS: OnceLock<Vec<String>> = OnceLock::new();
    TEXTS.get_or_init(|| fixtures().into_iter().map(|(_, t)| t).collect())
}

/// Parses; on success the printed program must parse and print identically.
fn check(src: &str) -> Result<(), TestCaseError> {
    match parse("fuzz.mapple", src) {
        Ok(prog) => {
            let printed = prog.to_string();
            match parse("printed.mapple", &printed) {
                Ok(again) => prop_assert_eq!(again.to_string(), printed),
                Err(e) => {
                    return Err(TestCaseError::fail(format!(
                        "printed program does not parse: {e}\n--- input ---\n{src}\n--- printed ---\n{printed}"
                    )))
                }
            }
        }
        Err(e) => {
            prop_assert!(e.line >= 1 && e.col >= 1);
            prop_assert!(!e.expected.is_empty());
        }
    }
    Ok(())
}

/// Characters that matter to the lexer and parser, plus some that are always errors.
const INTERESTING: &[char] = &[
    '(', ')', '[', ']', '{', '}', ',', ';', ':', '.', '?', '*', '+', '-', '/', '%', '=', '<', '>',
    '!', '&', '|', '#', '"', '\'', '\\', '\n', '\n', ' ', ' ', '\t', '\r', '0', '7', 'a', 'x', '_',
    '@', 'é', '\0',
];

const WORDS: &[&str] = &[
    "Task",
    "Region",
    "Layout",
    "IndexTaskMap",
    "SingleTaskMap",
    "GarbageCollect",
    "CollectMemory",
    "Backpressure",
    "InstanceLimit",
    "ControlReplicate",
    "TaskSteal",
    "SAME_NODE",
    "ANY_NODE",
    "No_Align",
    "SYSMEM",
    "greedy_split",
    "volume",
    "has",
    "//",
    "def",
    "return",
    "for",
    "in",
    "tuple",
    "Machine",
    "GPU",
    "CPU",
    "FBMEM",
    "SOA",
    "C_order",
    "Align",
    "Task task",
    "int",
    "m",
    "x",
    "task",
    "ipoint",
    "0",
    "1",
    "42",
    "\"{}\"",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    ":",
    ".",
    "?",
    "*",
    "+",
    "-",
    "/",
    "%",
    "=",
    "==",
    "!=",
    "<=",
    ">=",
    "<",
    ">",
    "&&",
    "||",
    "!",
    "#c",
    "\n",
    "\n    ",
    "\n  ",
    "\n\t",
    " ",
];

#[derive(Debug, Clone)]
enum Mutation {
    Delete(usize),
    Insert(usize, char),
    Replace(usize, char),
    /// Duplicates a range of characters (grows nesting and repetition).
    Duplicate(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let ch = proptest::sample::select(INTERESTING);
    prop_oneof![
        any::<usize>().prop_map(Mutation::Delete),
        (any::<usize>(), ch.clone()).prop_map(|(p, c)| Mutation::Insert(p, c)),
        (any::<usize>(), ch).prop_map(|(p, c)| Mutation::Replace(p, c)),
        (any::<usize>(), 1usize..40).prop_map(|(p, n)| Mutation::Duplicate(p, n)),
    ]
}

fn apply(text: &str, muts: &[Mutation]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for m in muts {
        let len = chars.len();
        match *m {
            Mutation::Delete(p) => {
                if len > 0 {
                    chars.remove(p % len);
                }
            }
            Mutation::Insert(p, c) => chars.insert(p % (len + 1), c),
            Mutation::Replace(p, c) => {
                if len > 0 {
                    chars[p % len] = c;
                }
            }
            Mutation::Duplicate(p, n) => {
                if len > 0 {
                    let start = p % len;
                    let end = (start + n).min(len);
                    let piece: Vec<char> = chars[start..end].to_vec();
                    for (k, c) in piece.into_iter().enumerate() {
                        chars.insert(end + k, c);
                    }
                }
            }
        }
    }
    chars.into_iter().collect()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fuzz_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        check(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn fuzz_token_soup(words in proptest::collection::vec(proptest::sample::select(WORDS), 0..80)) {
        check(&words.join(" "))?;
    }

    #[test]
    fn fuzz_mutated_fixtures(
        which in any::<usize>(),
        muts in proptest::collection::vec(mutation(), 1..8),
    ) {
        let texts = fixture_texts();
        prop_assume!(!texts.is_empty());
        let src = apply(&texts[which % texts.len()], &muts);
        check(&src)?;
    }
}
