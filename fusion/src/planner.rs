//! Planning a window: split it greedily into fusible groups over its dependence graph, find
//! each one's temporaries, and memoize the decision by the window's canonical form.
//!
//! Each group starts at the earliest task not yet placed and scans the window in program
//! order, taking every task that the four constraints admit and that depends on no task the
//! scan passed over (a task passed over stays after the group, so whatever depends on it
//! must too). Beyond a passed task only element-wise work joins, and only an element-wise
//! group: pulled into a row loop's kernel (SpMV, say) it would only leave the loops it fuses
//! with. The scan passes over at most `PlanOptions::lookahead` tasks.
//! Tasks a group takes from beyond ones it passed over run earlier than issued:
//! the plan's execution order keeps every dependence of the window, so the program's
//! results are unchanged, while an independent task between two fusible ones no longer
//! ends a group.
//!
//! A group launched over one point has no other point to communicate with, so a constraint
//! on stores does not end it: the task that violates one starts a new *stage* of the group
//! ([`Group::stages`]), which runs after the stages before it have run whole, their
//! reductions folded into their stores, at the same point. Small problems (a stencil on a
//! 64 x 64 grid: the stencil and the copy back into the grid it read; a solver's dot product
//! and the scalar work that reads it) then cost one launch where they cost several. Another
//! launch domain still ends such a group.

use std::ops::Range;

use diffuse_ir::{IndexTask, Privilege, Shape, StoreId};
use hashbrown::HashMap;

use crate::canonical::{canonicalize, CanonicalKey};
use crate::constraints::{PrefixState, Violation};
use crate::dependences::Dependences;
use crate::held::HeldStores;
use crate::temporaries::temporaries;

/// One fusible group of a window.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Group {
    /// The group's tasks, as positions in the window's execution order ([`Plan::order`]).
    pub tasks: Range<usize>,
    /// Its temporaries.
    pub temporaries: Vec<StoreId>,
    /// Where its stages after the first begin, as offsets into `tasks` (ascending; empty for
    /// a group of one stage). Only a group launched over one point has several: each stage
    /// meets the four constraints on its own, and its tasks run after every task of the
    /// stages before it has run at that point (not element by element with them) and their
    /// reductions have been folded into their stores.
    pub stages: Vec<usize>,
    /// The first constraint a task ready to join the group violated (`None` when every task
    /// it did not take depended on one it passed over, or it took the rest of the window).
    pub stopped_by: Option<Violation>,
}

/// The decision for a whole window: its execution order, and consecutive groups covering
/// that order.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Plan {
    /// The order the window's tasks run in, as indices into the window as issued; `None`
    /// when that is program order. It keeps every dependence of the window.
    pub order: Option<Vec<usize>>,
    /// The groups in execution order.
    pub groups: Vec<Group>,
    /// True when the decision was replayed from the memo instead of analysed.
    pub memoized: bool,
    /// The memo entry the decision belongs to: equal for every window of the same canonical
    /// form until the memo is cleared, never reused after (`None` without memoization).
    pub shape: Option<u64>,
}

impl Plan {
    /// Puts `tasks`, the window this plan was made for (in the order issued), into the
    /// plan's execution order.
    pub fn apply_order<T>(&self, tasks: &mut Vec<T>) {
        let Some(order) = &self.order else {
            return;
        };
        let mut slots: Vec<Option<T>> = tasks.drain(..).map(Some).collect();
        // `order` is a permutation of the window's indices: every slot is taken once.
        tasks.extend(
            order
                .iter()
                .filter_map(|&i| slots.get_mut(i).and_then(Option::take)),
        );
        debug_assert!(slots.iter().all(Option::is_none));
    }
}

/// One group of a decision in canonical terms: stores as canonical numbers.
#[derive(Clone, Debug)]
struct CanonicalGroup {
    len: usize,
    temporaries: Vec<usize>,
    stages: Vec<usize>,
    /// The violation that ended the group, and the canonical number of its store.
    stopped_by: Option<(Violation, Option<usize>)>,
}

/// The decision for a window in canonical terms.
#[derive(Clone, Debug)]
struct Decision {
    id: u64,
    order: Option<Vec<usize>>,
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
    options: PlanOptions,
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

    /// This planner, grouping with `options`.
    pub fn with_options(mut self, options: PlanOptions) -> Self {
        self.options = options;
        self
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
            return analyse_with(window, held, self.options);
        }
        let canonical = canonicalize(window, held);
        if let Some(decision) = self.memo.get(&canonical.key) {
            self.stats.replayed += 1;
            return replay(decision, &canonical.stores);
        }
        self.stats.analysed += 1;
        let mut plan = analyse_with(window, held, self.options);
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
            order: plan.order.clone(),
            groups: plan
                .groups
                .iter()
                .map(|g| CanonicalGroup {
                    len: g.tasks.len(),
                    temporaries: g.temporaries.iter().map(|s| position[s]).collect(),
                    stages: g.stages.clone(),
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

/// How windows are split into groups.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PlanOptions {
    /// Whether scalar work ([`IndexTask::is_scalar`], e.g. `alpha = rr / pq`) may join a
    /// group of another launch domain, every point computing it again: allowed when the
    /// group runs on one point, or when the scalar work only reads and writes and everything
    /// it writes is a temporary of the group (so each point keeps its own copy). Groups then
    /// run over [`group_launch`], their scalar work relaunched there.
    pub absorb_scalars: bool,
    /// Whether a group takes tasks from beyond ones it passed over only when they leave it
    /// as compilable as it is: all of its kinds with an MLIR generator, or not (what a
    /// runtime with a kernel compiler wants: one task without a generator keeps a whole
    /// group from running compiled code, and a group that runs natively should not grow
    /// with work that would otherwise compile). Tasks that follow a group directly join it
    /// as the constraints allow.
    pub keep_uncompilable_apart: bool,
    /// How many tasks one group's scan may pass over before the group ends (at least 1).
    /// It keeps the analysis linear in the window's length, and the groups close to program
    /// order: on TorchSWE (1024^2, 20 steps) a lookahead of 32 cut launches by 12% but made
    /// 50 kernel shapes instead of 36, whose compile time cost more than the steady state
    /// gained (nothing, at 100 steps); 4 keeps the time of strict prefixes.
    pub lookahead: usize,
    /// Whether a group launched over one point continues past a constraint on stores in a
    /// new stage ([`Group::stages`]). Staged groups run their constituents natively or in
    /// compiled segments per stage, on host processors (a runtime that may place work on
    /// GPUs, where only whole compiled kernels run, turns it off).
    pub one_point_stages: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            absorb_scalars: true,
            keep_uncompilable_apart: false,
            lookahead: 4,
            one_point_stages: true,
        }
    }
}

/// The launch domain a group runs over: its first task that is not scalar work decides
/// (scalar work joins any launch), else its first task.
pub fn group_launch<'a>(tasks: impl IntoIterator<Item = &'a IndexTask> + Clone) -> Shape {
    let first = |scalar_ok: bool| {
        tasks
            .clone()
            .into_iter()
            .find(|t| scalar_ok || !t.is_scalar())
            .map(IndexTask::launch_domain)
    };
    first(false)
        .or_else(|| first(true))
        .unwrap_or_else(|| Shape::splat(0, 1))
}

/// The decision for `window`, computed from scratch with the default [`PlanOptions`], with
/// the application's holds as in `held`.
pub fn analyse(window: &[IndexTask], held: &HeldStores) -> Plan {
    analyse_with(window, held, PlanOptions::default())
}

/// The decision for `window`, computed from scratch with `options`.
///
/// Scalar work is first offered to every group; where a group's temporaries turn out not to
/// hold what it writes, that work is planned again as an ordinary task (each round refuses
/// at least one more, so this ends).
pub fn analyse_with(window: &[IndexTask], held: &HeldStores, options: PlanOptions) -> Plan {
    let dependences = Dependences::of(window);
    let mut absorbable: Vec<bool> = window
        .iter()
        .map(|t| options.absorb_scalars && t.is_scalar())
        .collect();
    loop {
        let plan = group(window, held, &dependences, &absorbable, options);
        let refused = refused_scalars(window, &plan);
        if refused.is_empty() {
            return plan;
        }
        refused.into_iter().for_each(|t| absorbable[t] = false);
    }
}

/// Splits `window` into groups over its dependence graph, scalar work marked in `absorbable`
/// joining groups of any launch domain.
fn group(
    window: &[IndexTask],
    held: &HeldStores,
    dependences: &Dependences,
    absorbable: &[bool],
    options: PlanOptions,
) -> Plan {
    let compilable = |t: &IndexTask| t.kind().mlir_generator().is_some();
    let n = window.len();
    let mut placed = vec![false; n];
    let mut passed = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut spans = Vec::new();
    let mut first = 0;
    while order.len() < n {
        while placed[first] {
            first += 1;
        }
        let start = order.len();
        // The current stage, and the launch domain of the group's tasks that are not scalar
        // work (every stage's).
        let mut state = PrefixState::new();
        let mut launch: Option<Shape> = None;
        let mut stages = Vec::new();
        let mut stopped_by = None;
        let mut passed_over = Vec::new();
        let mut kernels = compilable(&window[first]);
        let mut elementwise = true;
        for t in first..n {
            if placed[t] {
                continue;
            }
            let task = &window[t];
            // Beyond a passed task, only element-wise work joins element-wise groups: pulled
            // into a row loop (SpMV, say), it would only leave the loops it fuses with.
            let reachable = passed_over.is_empty()
                || (elementwise
                    && task.kind().is_elementwise()
                    && (!options.keep_uncompilable_apart || compilable(task) == kernels));
            let ready = reachable && dependences.before(t).all(|d| !passed[d]);
            let joins = |stage: &PrefixState| -> Result<(), Violation> {
                if absorbable[t] {
                    stage.admits_scalar(task)
                } else if launch.is_some_and(|l| l != task.launch_domain()) {
                    Err(Violation::LaunchDomain)
                } else {
                    stage.admits(task)
                }
            };
            // Whether the task joins the current stage (`Ok(false)`) or starts a new one.
            let verdict = || match joins(&state) {
                Err(v)
                    if v != Violation::LaunchDomain
                        && options.one_point_stages
                        && launch.is_some_and(|l| l.volume() == 1) =>
                {
                    joins(&PrefixState::new()).map(|()| true)
                }
                other => other.map(|()| false),
            };
            let admitted = ready
                && match verdict() {
                    Ok(new_stage) => {
                        if new_stage {
                            stages.push(order.len() - start);
                            state = PrefixState::new();
                        }
                        true
                    }
                    Err(v) => {
                        stopped_by.get_or_insert(v);
                        false
                    }
                };
            if admitted {
                kernels &= compilable(task);
                elementwise &= task.kind().is_elementwise();
                if absorbable[t] {
                    state.push_scalar(task);
                } else {
                    state.push(task);
                    launch = Some(task.launch_domain());
                }
                placed[t] = true;
                order.push(t);
            } else {
                passed[t] = true;
                passed_over.push(t);
                if passed_over.len() >= options.lookahead.max(1) {
                    break;
                }
            }
        }
        passed_over.iter().for_each(|&t| passed[t] = false);
        spans.push((start..order.len(), stages, stopped_by));
    }
    let executed: Vec<&IndexTask> = order.iter().map(|&t| &window[t]).collect();
    let groups = spans
        .into_iter()
        .map(|(tasks, stages, stopped_by)| Group {
            temporaries: temporaries(&executed[tasks.start..], tasks.len(), held),
            tasks,
            stages,
            stopped_by,
        })
        .collect();
    let in_program_order = order.iter().enumerate().all(|(i, &t)| i == t);
    Plan {
        order: (!in_program_order).then_some(order),
        groups,
        memoized: false,
        shape: None,
    }
}

/// The scalar work of `plan` that may not run at every point of its group: in a group over
/// more than one point, work that reads and writes a store (or reduces) or writes a store
/// that is not one of the group's temporaries. Indices into the window.
fn refused_scalars(window: &[IndexTask], plan: &Plan) -> Vec<usize> {
    let index = |p: usize| plan.order.as_ref().map_or(p, |o| o[p]);
    let mut refused = Vec::new();
    for g in &plan.groups {
        let members = || g.tasks.clone().map(|p| &window[index(p)]);
        let launch = group_launch(members());
        if launch.volume() <= 1 {
            continue;
        }
        for p in g.tasks.clone() {
            let task = &window[index(p)];
            if task.launch_domain() == launch {
                continue;
            }
            let point_local = task.args().iter().all(|a| match a.privilege {
                Privilege::Read => true,
                Privilege::Write => g.temporaries.contains(&a.store.id()),
                Privilege::ReadWrite | Privilege::Reduce(_) => false,
            });
            if !point_local {
                refused.push(index(p));
            }
        }
    }
    refused
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
                stages: g.stages.clone(),
                stopped_by: g
                    .stopped_by
                    .map(|(v, store)| store.map_or(v, |i| v.with_store(stores[i]))),
            };
            start += g.len;
            group
        })
        .collect();
    Plan {
        order: decision.order.clone(),
        groups,
        memoized: true,
        shape: Some(decision.id),
    }
}
