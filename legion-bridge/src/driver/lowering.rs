//! Lowering a launch plan to Legion: one region requirement per argument of the plan's
//! fused signature, the regions (and partials regions) they reach, where each points, and
//! the index launches that run the plan's points and fold the reductions diffuse folds,
//! issued together in one Legion trace when Legion may replay them.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use diffuse_backend::{LaunchPlan, Slot};
use diffuse_ir::{DType, IrError, Partition, Point, Privilege, Rect, Shape, Tuple};

use super::issue::Issue;
use super::partitions::Target;
use super::Driver;
use crate::ffi;
use crate::geometry::launch_point_index;
use crate::launch::{Fold, Requirement, Role};
use crate::partials;
use crate::point_task::POINT_TASK_ID;
use crate::redops::redop;
use crate::shared::Shared;
use crate::traces::LaunchIdentity;
use crate::traffic::Access;

impl Driver {
    /// Issues `plan` as one index launch (nothing for an empty launch domain), followed by a
    /// launch of one point folding the reductions diffuse folds itself ([`crate::partials`]).
    pub(crate) fn execute(
        &mut self,
        plan: LaunchPlan,
        shared: &Arc<Shared>,
    ) -> Result<(), IrError> {
        let t = plan.template();
        let launch = t.launch_domain();
        if launch.volume() <= 0 {
            return Ok(());
        }
        let (mut requirements, mut arg_requirement) = requirements(&plan);
        let folded = partials::folded_by_diffuse(
            &plan,
            &requirements,
            &arg_requirement,
            shared.folded_reduction_elements,
        );
        let unfolded = |r: usize| !folded.iter().any(|f| f.requirement == r);
        if let Some(req) =
            requirements
                .iter()
                .enumerate()
                .find_map(|(r, req)| match req.privilege {
                    Privilege::Reduce(op) if unfolded(r) && redop(op, req.dtype).is_none() => {
                        Some(req)
                    }
                    _ => None,
                })
        {
            return Err(IrError::Backend {
                backend: "legion".into(),
                message: format!(
                    "{}: Legion has no {:?} reduction operator for {} and diffuse cannot fold \
                     this one itself (store {:?})",
                    t.name(),
                    req.privilege,
                    req.dtype,
                    plan.store(req.slot).shape()
                ),
            });
        }
        let mut regions = Vec::with_capacity(plan.stores().len());
        // Per store slot: its region is new and the fold zeroes it (the store is reached
        // only through reductions folded below).
        let mut zeroed_by_fold = vec![false; plan.stores().len()];
        for (s, store) in plan.stores().iter().enumerate() {
            let zeroable = point_zeroable(&plan, &requirements, s);
            let by_fold = folded.iter().any(|f| requirements[f.requirement].slot == s);
            let unfilled = t.overwrites(s) || zeroable.is_some() || by_fold;
            let (region, fresh) = self.region(store, shared, unfilled)?;
            if let Some(r) = zeroable.filter(|_| fresh && !t.overwrites(s)) {
                requirements[r].privilege = Privilege::Write;
                requirements[r].zeroed = true;
            }
            zeroed_by_fold[s] = fresh && by_fold;
            regions.push(region);
        }
        self.account_launch(&plan, &requirements, shared);
        // Each requirement's region and shape: the store's, or a reduction's partials.
        let mut bound: Vec<(ffi::legion_logical_region_t, Shape)> = requirements
            .iter()
            .map(|req| (regions[req.slot], plan.store(req.slot).shape()))
            .collect();
        // Every folded argument writes partials of its own: the first of a requirement
        // takes the requirement over, the others get new ones.
        let mut taken = vec![false; requirements.len()];
        let mut fold = FoldLaunch::default();
        for f in &folded {
            let (r, shape) = (f.requirement, f.shape);
            let (slot, dtype) = (requirements[r].slot, requirements[r].dtype);
            let nth = fold.folds.iter().filter(|f| f.slot == slot).count();
            let rows = self.partials_region(regions[slot], shape, dtype, nth);
            let writes_rows = Requirement {
                slot,
                partition: partials::rows(shape)?,
                privilege: Privilege::Write,
                dtype,
                zeroed: false,
                partials: true,
            };
            let index = if taken[r] {
                requirements.push(writes_rows);
                bound.push((rows, shape));
                requirements.len() - 1
            } else {
                taken[r] = true;
                requirements[r] = writes_rows;
                bound[r] = (rows, shape);
                r
            };
            arg_requirement[f.arg] = Some(index);
            fold.add(f, slot, dtype, rows, regions[slot], zeroed_by_fold[slot]);
        }
        let launch_rect = Rect::from_shape(launch);
        let mut targets = Vec::with_capacity(requirements.len());
        // Regions whose contents this launch leaves lazy in Legion (its reductions), and
        // those whose every element it maps (reads or writes through a covering partition).
        let mut reduced = Vec::new();
        let mut covered = Vec::new();
        for (req, &(region, shape)) in requirements.iter().zip(&bound) {
            if matches!(req.privilege, Privilege::Reduce(_)) {
                reduced.push(region.tree_id);
            } else if req.partition.covers(shape, launch) {
                covered.push(region.tree_id);
            }
            let target = self.target(region, shape, &req.partition, launch);
            targets.push((region, target));
        }
        let folding = (!fold.folds.is_empty()).then(|| {
            let FoldLaunch {
                folds,
                requirements,
                targets,
                covered,
            } = fold;
            Issue {
                plan: plan.clone(),
                role: Role::Fold(folds),
                launch: Rect::from_shape(Tuple::splat(1, 1)),
                requirements,
                arg_requirement: vec![None; t.args().len()],
                targets,
                reduced: Vec::new(),
                covered,
            }
        });
        let points = Issue {
            plan,
            role: Role::Points,
            launch: launch_rect,
            requirements,
            arg_requirement,
            targets,
            reduced,
            covered,
        };
        let issues: Vec<Issue> = std::iter::once(points).chain(folding).collect();
        // The launch and its fold replay as one Legion trace (one replay, not two).
        let trace = self.trace_of(&issues, shared);
        if let Some(id) = trace {
            // SAFETY: as above; the trace ends below, after the launches it holds.
            unsafe {
                self.api
                    .legion_runtime_begin_trace(self.runtime, self.ctx, id, false)
            };
        }
        let mut launched = Vec::with_capacity(issues.len());
        for issue in issues {
            if trace.is_some() {
                shared.counters.traced();
            }
            launched.push(self.issue(issue, shared));
        }
        if let Some(id) = trace {
            // SAFETY: as above.
            unsafe {
                self.api
                    .legion_runtime_end_trace(self.runtime, self.ctx, id)
            };
        }
        for launched in launched {
            self.track(launched, shared);
        }
        Ok(())
    }

    /// The Legion trace to issue `issues` (a launch and its fold) in, if they may be traced:
    /// recorded points report where each ran, which a replayed mapping would not redo;
    /// replicated runs issue no traces (their sharding is not traced); see `crate::traces`
    /// for the launches Legion would replay wrongly.
    fn trace_of(&mut self, issues: &[Issue], shared: &Shared) -> Option<u32> {
        let traceable = !self.replicated
            && !shared.recording()
            && issues.iter().all(|issue| {
                issue.reduced.is_empty()
                    && !issue
                        .targets
                        .iter()
                        .any(|(region, _)| self.traces.is_lazy(region.tree_id))
            });
        if !traceable {
            return None;
        }
        let mut identity = LaunchIdentity::default();
        for issue in issues {
            launch_identity(&mut identity, issue);
        }
        self.traces.trace_of(identity)
    }

    /// Updates the traffic model with what every point of `plan` reads, writes and reduces
    /// (replicated runs only).
    fn account_launch(&mut self, plan: &LaunchPlan, requirements: &[Requirement], shared: &Shared) {
        let Some(traffic) = &mut self.traffic else {
            return;
        };
        let t = plan.template();
        let processors = &t.placement().processors;
        let shape = t.launch_domain();
        let node = |p: &Point| {
            launch_point_index(p.as_slice(), &shape)
                .and_then(|i| processors.get(i))
                .map_or(0, |proc| proc.node)
        };
        for req in requirements {
            let store = plan.store(req.slot);
            let accesses: Vec<Access> = Rect::from_shape(shape)
                .points()
                .map(|p| Access {
                    node: node(&p),
                    rect: req.partition.sub_store(store.shape(), &p),
                })
                .collect();
            match req.privilege {
                Privilege::Read => traffic.read(store.id(), &accesses),
                Privilege::Write => traffic.write(store.id(), &accesses),
                Privilege::ReadWrite => {
                    traffic.read(store.id(), &accesses);
                    traffic.write(store.id(), &accesses);
                }
                Privilege::Reduce(_) => traffic.reduce(store.id(), &accesses),
            }
        }
        shared.counters.set_bytes_moved(traffic.moved());
    }
}

/// The fold launch of a plan's reductions that diffuse folds, as it is gathered: per
/// folded argument a requirement on its partials (read), per store one on its whole region.
#[derive(Default)]
struct FoldLaunch {
    folds: Vec<Fold>,
    requirements: Vec<Requirement>,
    targets: Vec<(ffi::legion_logical_region_t, Target)>,
    covered: Vec<ffi::legion_distributed_id_t>,
}

impl FoldLaunch {
    /// Adds the fold of `folded`'s partials (`rows`) into store slot `slot` of `dtype` (its
    /// region `store`; `zero`: new, zeroed by the fold).
    fn add(
        &mut self,
        folded: &partials::Folded,
        slot: usize,
        dtype: DType,
        rows: ffi::legion_logical_region_t,
        store: ffi::legion_logical_region_t,
        zero: bool,
    ) {
        let whole = |privilege, zeroed, partials| Requirement {
            slot,
            partition: Partition::replicate(),
            privilege,
            dtype,
            zeroed,
            partials,
        };
        let to_store = match self.folds.iter().find(|f| f.slot == slot) {
            Some(f) => f.store,
            None => {
                self.requirements.push(if zero {
                    whole(Privilege::Write, true, false)
                } else {
                    whole(Privilege::ReadWrite, false, false)
                });
                self.targets.push((store, Target::Whole));
                self.covered.push(store.tree_id);
                self.requirements.len() - 1
            }
        };
        self.requirements.push(whole(Privilege::Read, false, true));
        self.targets.push((rows, Target::Whole));
        self.folds.push(Fold {
            arg: folded.arg,
            slot,
            partials: self.requirements.len() - 1,
            store: to_store,
            op: folded.op,
        });
    }
}

/// Appends to `id` what Legion compares when it replays a trace of `issue`'s launch (of its
/// plan's points or its fold): the task, the domain, and per requirement its region,
/// privilege or reduction operator, partition and projection; and what the replay maps as
/// recorded, the template's placement (hashed: a collision could only misplace points).
fn launch_identity(id: &mut LaunchIdentity, issue: &Issue) {
    let Issue {
        plan,
        role,
        launch,
        requirements,
        targets,
        ..
    } = issue;
    let template = plan.template();
    let name = template.name();
    id.push(u64::from(POINT_TASK_ID));
    id.push(u64::from(matches!(role, Role::Fold(_))));
    id.extend(name.bytes().map(u64::from));
    id.push(name.len() as u64);
    let mut placement = std::collections::hash_map::DefaultHasher::new();
    template.placement().hash(&mut placement);
    id.push(placement.finish());
    id.extend(
        launch
            .lo
            .as_slice()
            .iter()
            .chain(launch.hi.as_slice())
            .map(|&c| c as u64),
    );
    for (req, (region, target)) in requirements.iter().zip(targets) {
        id.extend([region.tree_id, region.index_space.id, region.field_space.id]);
        id.push(match req.privilege {
            Privilege::Read => 1,
            Privilege::Write => 2,
            Privilege::ReadWrite => 3,
            Privilege::Reduce(op) => 4 + redop(op, req.dtype).map_or(0, |id| id as u64),
        });
        match target {
            Target::Whole => id.push(0),
            Target::Tiles(partition, projection) => {
                id.extend([partition.tree_id, partition.index_partition.id]);
                if let Some((functor, encoded)) = projection {
                    id.push(u64::from(*functor));
                    id.extend(encoded.iter().map(|&c| c as u64));
                }
                id.push(u64::MAX);
            }
        }
    }
}

/// One requirement per argument of the plan's fused signature (a distinct store slot and
/// partition, privileges joined in program order), and each template argument's requirement.
///
/// A launch over one point needs neither of Legion's mechanisms for several points: its
/// reductions read and write the store (the point folds its contributions into the mapped
/// instance, as the embedded backend does, instead of into a fresh reduction instance that
/// Legion folds after), and a store it writes through one partition and reaches through
/// another (a task of several stages, see `LaunchTemplate::stages`) gets one requirement on
/// its whole region, every access joined in program order (Legion refuses interfering
/// aliased requirements of one task; a first write that leaves part of the store as it was
/// reads it too).
fn requirements(plan: &LaunchPlan) -> (Vec<Requirement>, Vec<Option<usize>>) {
    let t = plan.template();
    let fused = t.fused_args();
    let one_point = t.launch_domain().volume() == 1;
    let access = |p: Privilege| match p {
        Privilege::Reduce(_) if one_point => Privilege::ReadWrite,
        p => p,
    };
    let whole_region = |slot: usize| {
        one_point
            && fused
                .iter()
                .any(|f| f.slot == slot && access(f.privilege).mutates())
            && fused.iter().filter(|f| f.slot == slot).count() > 1
    };
    let mut reqs: Vec<Requirement> = Vec::with_capacity(fused.len());
    // Each fused argument's requirement.
    let mut of_fused: Vec<usize> = Vec::with_capacity(fused.len());
    for f in fused {
        let merged = whole_region(f.slot)
            .then(|| reqs.iter().position(|r| r.slot == f.slot))
            .flatten();
        of_fused.push(merged.unwrap_or_else(|| {
            reqs.push(Requirement {
                slot: f.slot,
                partition: if whole_region(f.slot) {
                    Partition::replicate()
                } else {
                    f.partition.clone()
                },
                privilege: access(f.privilege),
                dtype: plan.store(f.slot).dtype(),
                zeroed: false,
                partials: false,
            });
            reqs.len() - 1
        }));
    }
    for r in reqs.iter_mut().filter(|r| whole_region(r.slot)) {
        let mut accesses = t.args().iter().filter(|a| a.slot == Slot::Store(r.slot));
        let Some(first) = accesses.next() else {
            continue;
        };
        r.privilege = accesses.fold(access(first.privilege), |p, a| p.then(access(a.privilege)));
        if r.privilege == Privilege::Write
            && !first.partition.covers(first.shape, t.launch_domain())
        {
            r.privilege = Privilege::ReadWrite;
        }
    }
    let of_arg = (0..t.args().len())
        .map(|i| t.fused_arg_of(i).map(|f| of_fused[f]))
        .collect();
    (reqs, of_arg)
}

/// The requirement through which a one-point launch's single point could zero store slot
/// `s` itself if the store is new: its one requirement, covering the store and writable.
/// (A Legion fill instead leaves the region's contents lazy, which keeps the launch out of
/// traces, and costs Legion more to map than the point's few zero bytes.)
fn point_zeroable(plan: &LaunchPlan, requirements: &[Requirement], s: usize) -> Option<usize> {
    let t = plan.template();
    let launch = t.launch_domain();
    if launch.volume() != 1 {
        return None;
    }
    let mut of_slot = requirements.iter().enumerate().filter(|(_, r)| r.slot == s);
    let (r, req) = of_slot.next()?;
    let alone = of_slot.next().is_none();
    (alone && req.privilege.mutates() && req.partition.covers(plan.store(s).shape(), launch))
        .then_some(r)
}

#[cfg(test)]
mod tests {
    use diffuse_ir::{IndexTask, Store, View};

    use super::*;
    use crate::test_plans::{f64_stores, kind, plan_of};

    /// One launch point, in two dimensions.
    fn one() -> Shape {
        Tuple::shape(&[1, 1]).unwrap()
    }

    /// The tiling over one point of the view `[offset, offset + extent)` of `s`.
    fn view(s: &Store, offset: [i64; 2], extent: [i64; 2]) -> Partition {
        View::new(
            s,
            Tuple::new(&offset).unwrap(),
            Tuple::shape(&extent).unwrap(),
        )
        .and_then(|v| v.blocked(one()))
        .unwrap()
    }

    /// A plan of `tasks` in two stages, the second starting at task 1.
    fn staged(tasks: Vec<IndexTask>) -> LaunchPlan {
        plan_of(tasks, &[1])
    }

    #[test]
    fn a_store_written_and_read_through_two_partitions_gets_one_whole_region_requirement() {
        let [grid, tmp] = f64_stores([&[8, 8], &[6, 6]]);
        let (r, w) = (Privilege::Read, Privilege::Write);
        let sum = IndexTask::new(&kind("sum", &[r, r, w]), one())
            .arg(&grid, view(&grid, [0, 1], [6, 6]), r)
            .arg(&grid, view(&grid, [2, 1], [6, 6]), r)
            .arg(&tmp, view(&tmp, [0, 0], [6, 6]), w);
        let copy = IndexTask::new(&kind("copy", &[r, w]), one())
            .arg(&tmp, view(&tmp, [0, 0], [6, 6]), r)
            .arg(&grid, view(&grid, [1, 1], [6, 6]), w);
        let (reqs, of_arg) = requirements(&staged(vec![sum, copy]));
        // The grid: one requirement on its whole region, read then written; `tmp`: its
        // own partition, written whole and then read.
        assert_eq!(reqs.len(), 2);
        assert_eq!(reqs[0].partition, Partition::replicate());
        assert_eq!(reqs[0].privilege, Privilege::ReadWrite);
        assert_eq!(reqs[1].partition, view(&tmp, [0, 0], [6, 6]));
        assert_eq!(reqs[1].privilege, Privilege::Write);
        assert_eq!(of_arg, vec![Some(0), Some(0), Some(1), Some(1), Some(0)]);
    }

    /// Plans of `acc = sum(x)` (an 8 x 8 `x` read through its blocks, a 0-d `acc` reduced
    /// into) over one launch point and over two, and `x`.
    fn sums_over_one_and_two_points(name: &str) -> (LaunchPlan, LaunchPlan, Store) {
        let [x, acc] = f64_stores([&[8, 8], &[]]);
        let (r, sum) = (
            Privilege::Read,
            Privilege::Reduce(diffuse_ir::ReductionOp::Sum),
        );
        let sum_all = kind(name, &[r, sum]);
        let plan = |launch: Shape| {
            let task = IndexTask::new(&sum_all, launch)
                .arg(&x, x.view().blocked(launch).unwrap(), r)
                .arg(&acc, Partition::replicate(), sum);
            plan_of(vec![task], &[])
        };
        let (one_point, two_points) = (plan(one()), plan(Tuple::shape(&[2, 1]).unwrap()));
        (one_point, two_points, x)
    }

    #[test]
    fn reductions_of_a_one_point_launch_read_and_write_the_store() {
        let (one_point, two_points, _) = sums_over_one_and_two_points("sum_all");
        let (one, _) = requirements(&one_point);
        assert_eq!(one[1].privilege, Privilege::ReadWrite);
        // Over two points each folds into a reduction instance of its own.
        let (two, _) = requirements(&two_points);
        assert_eq!(
            two[1].privilege,
            Privilege::Reduce(diffuse_ir::ReductionOp::Sum)
        );
    }

    #[test]
    fn only_a_one_point_launch_writing_its_whole_store_may_zero_a_new_one_itself() {
        let (one_point, two_points, x) = sums_over_one_and_two_points("zero_sum_all");
        let (reqs, _) = requirements(&one_point);
        // The sum's store: its point zeroes it; the read-only input keeps Legion's fill.
        assert_eq!(point_zeroable(&one_point, &reqs, 1), Some(1));
        assert_eq!(point_zeroable(&one_point, &reqs, 0), None);
        // Over two points no point holds the whole store (its fold, or Legion's fill,
        // zeroes it).
        let (reqs, _) = requirements(&two_points);
        assert_eq!(point_zeroable(&two_points, &reqs, 1), None);
        // A one-point write of part of a store leaves the rest as it was: filled.
        let head = IndexTask::new(&kind("zero_head", &[Privilege::ReadWrite]), one()).arg(
            &x,
            view(&x, [0, 0], [4, 8]),
            Privilege::ReadWrite,
        );
        let part = plan_of(vec![head], &[]);
        let (reqs, _) = requirements(&part);
        assert_eq!(point_zeroable(&part, &reqs, 0), None);
    }

    #[test]
    fn small_reductions_over_several_points_are_folded_by_diffuse_and_others_by_legion() {
        let (one_point, two_points, x) = sums_over_one_and_two_points("fold_sum_all");
        let limit = crate::LegionConfig::default().folded_reduction_elements;
        // One point folds into the store's own instance.
        let (reqs, of_arg) = requirements(&one_point);
        assert!(partials::folded_by_diffuse(&one_point, &reqs, &of_arg, limit).is_empty());
        // Two: the sum (argument 1, requirement 1) writes rows of partials, unless they would
        // be larger than allowed (two elements here).
        let (reqs, of_arg) = requirements(&two_points);
        assert_eq!(
            partials::folded_by_diffuse(&two_points, &reqs, &of_arg, limit),
            vec![partials::Folded {
                arg: 1,
                requirement: 1,
                op: diffuse_ir::ReductionOp::Sum,
                shape: Tuple::shape(&[2, 1, 1]).unwrap(),
            }]
        );
        assert!(partials::folded_by_diffuse(&two_points, &reqs, &of_arg, 1).is_empty());
        // A store the launch also reaches otherwise (read here) stays with Legion.
        let [acc] = f64_stores([&[]]);
        let (r, sum) = (
            Privilege::Read,
            Privilege::Reduce(diffuse_ir::ReductionOp::Sum),
        );
        let launch = Tuple::shape(&[2, 1]).unwrap();
        let scaled = IndexTask::new(&kind("fold_read_acc", &[r, r]), launch)
            .arg(&x, x.view().blocked(launch).unwrap(), r)
            .arg(&acc, Partition::replicate(), r);
        let summed = IndexTask::new(&kind("fold_sum_into_read", &[r, sum]), launch)
            .arg(&x, x.view().blocked(launch).unwrap(), r)
            .arg(&acc, Partition::replicate(), sum);
        let both = plan_of(vec![scaled, summed], &[]);
        let (reqs, of_arg) = requirements(&both);
        assert!(partials::folded_by_diffuse(&both, &reqs, &of_arg, limit).is_empty());
    }

    #[test]
    fn a_merged_requirement_whose_first_write_leaves_part_of_the_store_reads_it() {
        let [x, y] = f64_stores([&[8, 8], &[8, 8]]);
        let (r, w) = (Privilege::Read, Privilege::Write);
        let head = IndexTask::new(&kind("head", &[w]), one()).arg(&x, view(&x, [0, 0], [4, 8]), w);
        let all = IndexTask::new(&kind("all", &[r, w]), one())
            .arg(&x, view(&x, [0, 0], [8, 8]), r)
            .arg(&y, view(&y, [0, 0], [8, 8]), w);
        let (reqs, _) = requirements(&staged(vec![head, all]));
        // Written first, but only its head: the rest keeps its values, so Legion must not
        // discard them.
        assert_eq!(reqs[0].partition, Partition::replicate());
        assert_eq!(reqs[0].privilege, Privilege::ReadWrite);
        assert_eq!(reqs[1].privilege, Privilege::Write);
    }
}
