//! Planning a window: split it greedily into fusible prefixes, find each one's temporaries,
//! and memoize the decision by the window's canonical form.

use std::ops::Range;

use diffuse_ir::{IndexTask, StoreId};
use hashbrown::HashMap;

use crate::canonical::{canonicalize, CanonicalKey};
use crate::constraints::{longest_fusible_prefix, Violation};
use crate::held::HeldStores;
use crate::temporaries::temporaries;

/// One fusible group of a window.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Group {
    /// The group's tasks, as indices into the window.
    pub tasks: Range<usize>,
    /// Its temporaries.
    pub temporaries: Vec<StoreId>,
    /// What stopped the group from growing (`None` when it reached the window's end).
    pub stopped_by: Option<Violation>,
}

/// The decision for a whole window: consecutive groups covering it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Plan {
    /// The groups in program order.
    pub groups: Vec<Group>,
    /// True when the decision was replayed from the memo instead of analysed.
    pub memoized: bool,
    /// The memo entry the decision belongs to: equal for every window of the same canonical
    /// form until the memo is cleared, never reused after (`None` without memoization).
    pub shape: Option<u64>,
}

/// One group of a decision in canonical terms: stores as canonical numbers.
#[derive(Clone, Debug)]
struct CanonicalGroup {
    len: usize,
    temporaries: Vec<usize>,
    /// The violation that ended the group, and the canonical number of its store.
    stopped_by: Option<(Violation, Option<usize>)>,
}

/// The decision for a window in canonical terms.
#[derive(Clone, Debug)]
struct Decision {
    id: u64,
    groups: Vec<CanonicalGroup>,
}

/// Counters of the planner's work.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct PlannerStats {
    /// Windows analysed from scratch.
    pub analysed: u64,
    /// Windows whose decision was replayed from the memo.
    pub replayed: u64,
}

/// Plans windows, remembering decisions by canonical form.
#[derive(Default)]
pub struct Planner {
    memo: HashMap<CanonicalKey, Decision>,
    stats: PlannerStats,
    memoize: bool,
    next_id: u64,
}

/// Decisions kept at most; the memo is cleared when it grows past this (solver loops repeat a
/// handful of window shapes, so a full memo means the stream is not repeating).
const MEMO_CAPACITY: usize = 4096;

impl Planner {
    /// A planner that memoizes decisions.
    pub fn new() -> Self {
        Planner {
            memoize: true,
            ..Default::default()
        }
    }

    /// A planner that analyses every window from scratch (for measuring the analysis).
    pub fn without_memo() -> Self {
        Planner::default()
    }

    /// What the planner has done so far.
    pub fn stats(&self) -> PlannerStats {
        self.stats
    }

    /// Splits `window` into fusible groups with their temporaries, given which stores the
    /// application holds (one snapshot for the whole decision, see [`HeldStores`]).
    pub fn plan(&mut self, window: &[IndexTask], held: &HeldStores) -> Plan {
        if !self.memoize {
            self.stats.analysed += 1;
            return analyse(window, held);
        }
        let canonical = canonicalize(window, held);
        if let Some(decision) = self.memo.get(&canonical.key) {
            self.stats.replayed += 1;
            return replay(decision, &canonical.stores);
        }
        self.stats.analysed += 1;
        let mut plan = analyse(window, held);
        let id = self.next_id;
        self.next_id += 1;
        plan.shape = Some(id);
        let position: HashMap<StoreId, usize> = canonical
            .stores
            .iter()
            .enumerate()
            .map(|(i, &s)| (s, i))
            .collect();
        let decision = Decision {
            id,
            groups: plan
                .groups
                .iter()
                .map(|g| CanonicalGroup {
                    len: g.tasks.len(),
                    temporaries: g.temporaries.iter().map(|s| position[s]).collect(),
                    stopped_by: g
                        .stopped_by
                        .map(|v| (v, v.store().and_then(|s| position.get(&s).copied()))),
                })
                .collect(),
        };
        if self.memo.len() >= MEMO_CAPACITY {
            self.memo.clear();
        }
        self.memo.insert(canonical.key, decision);
        plan
    }
}

/// The decision for `window`, computed from scratch, with the application's holds as in
/// `held`.
pub fn analyse(window: &[IndexTask], held: &HeldStores) -> Plan {
    let mut groups = Vec::new();
    let mut start = 0;
    while start < window.len() {
        let rest = &window[start..];
        let (len, stopped_by) = longest_fusible_prefix(rest);
        groups.push(Group {
            tasks: start..start + len,
            temporaries: temporaries(rest, len, held),
            stopped_by,
        });
        start += len;
    }
    Plan {
        groups,
        memoized: false,
        shape: None,
    }
}

/// A memoized decision applied to the stores of an isomorphic window.
fn replay(decision: &Decision, stores: &[StoreId]) -> Plan {
    let mut start = 0;
    let groups = decision
        .groups
        .iter()
        .map(|g| {
            let group = Group {
                tasks: start..start + g.len,
                temporaries: g.temporaries.iter().map(|&i| stores[i]).collect(),
                stopped_by: g
                    .stopped_by
                    .map(|(v, store)| store.map_or(v, |i| v.with_store(stores[i]))),
            };
            start += g.len;
            group
        })
        .collect();
    Plan {
        groups,
        memoized: true,
        shape: Some(decision.id),
    }
}
