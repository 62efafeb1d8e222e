//! Legion traces of repeated launches.
//!
//! Legion analyses every launch's dependences and maps every one of its points anew, on its
//! utility processor: ~70 µs per point on a 2-core machine, more than a 1024² stencil's
//! kernels take. A launch issued inside a trace Legion has recorded replays the recorded
//! analysis and mapping instead. The runtime's memoized windows issue the same launches
//! every iteration, and a dead store's region goes to the next store of its shape and
//! dtype, so a solver's or a stencil's launches repeat exactly.
//!
//! A launch is traced under an id of its own (with the fold launch of the reductions diffuse
//! folds for it, `crate::partials`: one replay for both), given to everything Legion checks
//! a trace's operations against (launch domain, task, region requirements); see
//! [`LaunchIdentity`]. It goes into a trace from its [`TRACED_FROM`]th sighting on (a launch
//! seen once or twice may never come back, and recording costs more than analysing), and at
//! most [`LaunchTraces::new`]'s `limit` distinct launches get a trace (Legion keeps every
//! trace it recorded for the life of the context, and a trace id cannot be given to other
//! operations).
//!
//! Lazy contents are never traced. Legion (26.1) keeps a zero fill, and the reductions of a
//! launch over several points, as pending views of a region, applied when a later operation
//! maps it. A replayed trace skips that: it ran on the instance as it was when recorded
//! (found by the differential property: a reduction into a recycled 0-d store's region
//! started from the previous store's sum, a scalar task read a dot product before its
//! reductions were folded). So a launch that reduces is not traced, nor one that touches a
//! region whose contents are lazy: filled or reduced into since a launch last mapped all of
//! it ([`LaunchTraces::contents_lazy`], [`LaunchTraces::contents_materialized`]).

use hashbrown::{HashMap, HashSet};

/// Everything Legion checks when a trace is replayed, as words: two launches with equal
/// identities are the same operation to Legion (same task, launch domain, regions,
/// partitions, projections, privileges and reduction operators, in order).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct LaunchIdentity(Vec<u64>);

impl LaunchIdentity {
    /// Appends one word of the launch's description.
    pub(crate) fn push(&mut self, word: u64) {
        self.0.push(word);
    }

    /// Appends several words.
    pub(crate) fn extend(&mut self, words: impl IntoIterator<Item = u64>) {
        self.0.extend(words);
    }
}

/// The sighting of a launch from which on it is traced: loops repeat their launches many
/// times, while a program that runs a few steps twice (a warm-up, then the run) would spend
/// traces it never replays.
pub(crate) const TRACED_FROM: u32 = 3;

/// Most launch identities remembered, traced or seen once. A program whose launches never
/// repeat (fresh regions every time) stops being remembered there instead of growing.
const MAX_REMEMBERED: usize = 1 << 16;

/// What is known of one launch identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sighted {
    /// Seen this many times, not traced.
    Times(u32),
    /// Issued in the trace with this id.
    Traced(u32),
}

/// The launches seen so far and the traces given to the repeated ones.
pub(crate) struct LaunchTraces {
    /// Each identity seen: its trace once it has one, else how often it was seen.
    seen: HashMap<LaunchIdentity, Sighted>,
    /// Traces given so far.
    traced: usize,
    /// Most traces given.
    limit: usize,
    /// Regions (by region tree id) whose contents Legion may hold as pending fills or
    /// reductions.
    lazy: HashSet<u64>,
}

impl LaunchTraces {
    /// No launch seen yet; at most `limit` traces (0: nothing is traced).
    pub(crate) fn new(limit: usize) -> Self {
        LaunchTraces {
            seen: HashMap::new(),
            traced: 0,
            limit,
            lazy: HashSet::new(),
        }
    }

    /// How many traces were given so far (one per distinct repeated launch).
    pub(crate) fn given(&self) -> usize {
        self.traced
    }

    /// Notes that a fill or a reduction left the contents of the region with tree id
    /// `region` lazy: launches touching it are not traced until it is materialized.
    pub(crate) fn contents_lazy(&mut self, region: u64) {
        self.lazy.insert(region);
    }

    /// Notes that a launch mapped every element of the region with tree id `region` (Legion
    /// applied what was pending), or that the region is gone.
    pub(crate) fn contents_materialized(&mut self, region: u64) {
        self.lazy.remove(&region);
    }

    /// True when the region with tree id `region` may hold lazy contents.
    pub(crate) fn is_lazy(&self, region: u64) -> bool {
        self.lazy.contains(&region)
    }

    /// The trace to issue the launch `identity` in, if any: none before its
    /// [`TRACED_FROM`]th sighting, its own trace id from then on while traces are left. The
    /// same identity always gets the same id.
    pub(crate) fn trace_of(&mut self, identity: LaunchIdentity) -> Option<u32> {
        if self.limit == 0 {
            return None;
        }
        let remembered = self.seen.len();
        let Some(sighted) = self.seen.get_mut(&identity) else {
            if remembered < MAX_REMEMBERED {
                self.seen.insert(identity, Sighted::Times(1));
            }
            return None;
        };
        match *sighted {
            Sighted::Traced(id) => Some(id),
            Sighted::Times(n) if n + 1 >= TRACED_FROM && self.traced < self.limit => {
                self.traced += 1;
                // Trace ids are the context's own; diffuse issues no other trace there.
                let id = self.traced as u32;
                *sighted = Sighted::Traced(id);
                tracing::debug!(
                    trace = id,
                    identities = remembered,
                    "a launch got a Legion trace"
                );
                Some(id)
            }
            Sighted::Times(n) => {
                *sighted = Sighted::Times(n.saturating_add(1));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(words: &[u64]) -> LaunchIdentity {
        let mut id = LaunchIdentity::default();
        id.extend(words.iter().copied());
        id
    }

    /// Sights `id` until just before it would be traced.
    fn sight_untraced(traces: &mut LaunchTraces, id: &LaunchIdentity) {
        for _ in 1..TRACED_FROM {
            assert_eq!(traces.trace_of(id.clone()), None);
        }
    }

    #[test]
    fn a_launch_is_traced_from_its_third_sighting_under_one_id() {
        let mut traces = LaunchTraces::new(8);
        let stencil = identity(&[4, 4, 1, 7]);
        let copy = identity(&[4, 4, 2, 7]);
        sight_untraced(&mut traces, &stencil);
        sight_untraced(&mut traces, &copy);
        let first = traces.trace_of(stencil.clone());
        let second = traces.trace_of(copy.clone());
        assert!(first.is_some() && second.is_some() && first != second);
        for _ in 0..3 {
            assert_eq!(traces.trace_of(stencil.clone()), first);
            assert_eq!(traces.trace_of(copy.clone()), second);
        }
    }

    #[test]
    fn lazy_contents_last_until_materialized() {
        let mut traces = LaunchTraces::new(8);
        assert!(!traces.is_lazy(3));
        traces.contents_lazy(3);
        traces.contents_lazy(3);
        assert!(traces.is_lazy(3) && !traces.is_lazy(4));
        traces.contents_materialized(3);
        assert!(!traces.is_lazy(3));
    }

    #[test]
    fn no_more_traces_than_the_limit_and_none_with_limit_zero() {
        let mut traces = LaunchTraces::new(2);
        let ids: Vec<LaunchIdentity> = (0..4).map(|k| identity(&[k])).collect();
        for id in &ids {
            sight_untraced(&mut traces, id);
        }
        let given: Vec<Option<u32>> = ids.iter().map(|id| traces.trace_of(id.clone())).collect();
        assert_eq!(given, vec![Some(1), Some(2), None, None]);
        // Once given, a trace stays its launch's.
        assert_eq!(traces.trace_of(ids[1].clone()), Some(2));

        let mut off = LaunchTraces::new(0);
        for _ in 0..TRACED_FROM + 2 {
            assert_eq!(off.trace_of(identity(&[1])), None);
        }
    }

    #[test]
    fn launches_seen_once_stop_being_remembered_at_the_bound() {
        let mut traces = LaunchTraces::new(4);
        for k in 0..MAX_REMEMBERED as u64 + 10 {
            assert_eq!(traces.trace_of(identity(&[k])), None);
        }
        assert_eq!(traces.seen.len(), MAX_REMEMBERED);
        // A remembered launch is still traced when it comes back; a forgotten one is not.
        for _ in 2..TRACED_FROM {
            assert_eq!(traces.trace_of(identity(&[0])), None);
        }
        assert_eq!(traces.trace_of(identity(&[0])), Some(1));
        let forgotten = identity(&[MAX_REMEMBERED as u64 + 5]);
        for _ in 0..TRACED_FROM {
            assert_eq!(traces.trace_of(forgotten.clone()), None);
        }
    }
}
