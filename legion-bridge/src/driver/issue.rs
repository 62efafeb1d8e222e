//! Handing one index launch of the point task to Legion: its global argument (the launch
//! entry's key, and the sharding functor in a replicated run), its region requirements with
//! their privileges or reduction operators and projections, and Mapple's `Backpressure`
//! limit for it.

use std::ffi::c_void;
use std::sync::Arc;

use diffuse_backend::LaunchPlan;
use diffuse_ir::{DType, Privilege, Rect, ReductionOp};

use super::in_flight::Launched;
use super::partitions::Target;
use super::Driver;
use crate::ffi;
use crate::geometry::{domain, FIELD};
use crate::launch::{LaunchEntry, Requirement, Role};
use crate::point_task::POINT_TASK_ID;
use crate::redops::redop;
use crate::shared::Shared;

/// A launch of the point task, ready to issue ([`Driver::issue`]).
pub(super) struct Issue {
    pub(super) plan: LaunchPlan,
    pub(super) role: Role,
    /// The launch domain.
    pub(super) launch: Rect,
    pub(super) requirements: Vec<Requirement>,
    /// For every template argument, its requirement (`None` for temporaries, and in a fold).
    pub(super) arg_requirement: Vec<Option<usize>>,
    /// Per requirement, its region and how the launch reaches it.
    pub(super) targets: Vec<(ffi::legion_logical_region_t, Target)>,
    /// Regions whose contents the launch leaves lazy in Legion (it reduces into them).
    pub(super) reduced: Vec<ffi::legion_distributed_id_t>,
    /// Regions whose every element the launch maps.
    pub(super) covered: Vec<ffi::legion_distributed_id_t>,
}

impl Driver {
    /// Issues one index launch of the point task: `issue.plan`'s points or its fold.
    pub(super) fn issue(&mut self, issue: Issue, shared: &Arc<Shared>) -> Launched {
        let Issue {
            plan,
            role,
            launch,
            requirements,
            arg_requirement,
            targets,
            reduced,
            covered,
        } = issue;
        let t = plan.template();
        let folding = matches!(role, Role::Fold(_));
        // Mapple's Backpressure: before this launch goes, at most `limit - 1` others of the
        // task may still run (waited for below, once this one is issued).
        let limit = t
            .placement()
            .in_flight_limit
            .filter(|_| !folding)
            .map(|l| l.max(1));
        let name = t.name().clone();
        let sharding = self.replicated.then(|| {
            let processors = &t.placement().processors;
            let nodes: Vec<u32> = if folding {
                // The fold runs where the plan's first point does.
                vec![processors.first().map_or(0, |p| p.node as u32)]
            } else {
                processors.iter().map(|p| p.node as u32).collect()
            };
            self.sharding(nodes)
        });
        let points = launch.volume().max(0) as usize;
        let key = LaunchEntry::register(
            plan,
            role,
            requirements.clone(),
            arg_requirement,
            Arc::clone(shared),
            (!self.replicated).then_some(points),
        );
        // The launch's global argument: its key, then (replicated) its sharding functor.
        let mut arg = key.to_ne_bytes().to_vec();
        if let Some(id) = sharding {
            arg.extend_from_slice(&id.to_ne_bytes());
            self.unfenced.push(key);
        }
        // SAFETY: as above; every handle passed was made by this driver and is alive, the
        // global argument is copied by Legion when the launcher is made.
        unsafe {
            let api = self.api;
            let args = api.legion_argument_map_create();
            let launcher = api.legion_index_launcher_create(
                POINT_TASK_ID,
                domain(&launch),
                ffi::legion_untyped_buffer_t {
                    args: arg.as_mut_ptr() as *mut c_void,
                    arglen: arg.len(),
                },
                args,
                api.legion_predicate_true(),
                false,
                0,
                0,
            );
            for (idx, (req, (region, target))) in requirements.iter().zip(&targets).enumerate() {
                let added = match (target, req.privilege) {
                    (Target::Whole, Privilege::Reduce(op)) => api
                        .legion_index_launcher_add_region_requirement_logical_region_reduction(
                            launcher,
                            *region,
                            0,
                            legion_redop(op, req.dtype),
                            ffi::legion_coherence_property_t_LEGION_EXCLUSIVE,
                            *region,
                            0,
                            false,
                        ),
                    (Target::Whole, p) => api
                        .legion_index_launcher_add_region_requirement_logical_region(
                            launcher,
                            *region,
                            0,
                            privilege_mode(p),
                            ffi::legion_coherence_property_t_LEGION_EXCLUSIVE,
                            *region,
                            0,
                            false,
                        ),
                    (Target::Tiles(lp, proj), Privilege::Reduce(op)) => api
                        .legion_index_launcher_add_region_requirement_logical_partition_reduction(
                            launcher,
                            *lp,
                            proj.as_ref().map_or(0, |p| p.0),
                            legion_redop(op, req.dtype),
                            ffi::legion_coherence_property_t_LEGION_EXCLUSIVE,
                            *region,
                            0,
                            false,
                        ),
                    (Target::Tiles(lp, proj), p) => api
                        .legion_index_launcher_add_region_requirement_logical_partition(
                            launcher,
                            *lp,
                            proj.as_ref().map_or(0, |p| p.0),
                            privilege_mode(p),
                            ffi::legion_coherence_property_t_LEGION_EXCLUSIVE,
                            *region,
                            0,
                            false,
                        ),
                };
                debug_assert_eq!(added as usize, idx);
                if let Target::Tiles(_, Some((_, encoded))) = target {
                    api.legion_index_launcher_set_projection_args(
                        launcher,
                        added,
                        encoded.as_ptr() as *const c_void,
                        encoded.len() * 8,
                        false,
                    );
                }
                api.legion_index_launcher_add_field(launcher, added, FIELD, true);
            }
            let futures = api.legion_index_launcher_execute(self.runtime, self.ctx, launcher);
            for region in covered {
                self.traces.contents_materialized(region);
            }
            for region in reduced {
                self.traces.contents_lazy(region);
            }
            api.legion_index_launcher_destroy(launcher);
            api.legion_argument_map_destroy(args);
            Launched {
                futures,
                name,
                launch,
                limit,
                recorded: shared.recording() && !folding,
            }
        }
    }
}

fn privilege_mode(p: Privilege) -> ffi::legion_privilege_mode_t {
    match p {
        Privilege::Read => ffi::legion_privilege_mode_t_LEGION_READ_ONLY,
        Privilege::Write => ffi::legion_privilege_mode_t_LEGION_WRITE_DISCARD,
        Privilege::ReadWrite | Privilege::Reduce(_) => {
            ffi::legion_privilege_mode_t_LEGION_READ_WRITE
        }
    }
}

/// The operator of a reduction Legion folds: `Driver::execute` refuses a launch with any
/// other before it is issued.
fn legion_redop(op: ReductionOp, dtype: DType) -> ffi::legion_reduction_op_id_t {
    redop(op, dtype).expect("Driver::execute checked that Legion has this reduction operator")
}
