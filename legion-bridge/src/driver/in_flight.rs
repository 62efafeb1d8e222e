//! Launches Legion still runs: their future maps kept until something waits for them
//! (recorded points read back, Mapple's `Backpressure` limit per task, the next settle),
//! fences, and shutdown.

use std::sync::Arc;

use diffuse_backend::Processor;
use diffuse_ir::Rect;

use super::Driver;
use crate::ffi;
use crate::geometry::domain_point;
use crate::launch::LaunchEntry;
use crate::shared::{proc_kind, PointRecord, Shared};

/// A launch just issued, with what [`Driver::track`] needs to keep its futures.
pub(super) struct Launched {
    pub(super) futures: ffi::legion_future_map_t,
    /// Its task's name (a `Backpressure` limit holds per task).
    pub(super) name: Arc<str>,
    /// Its domain.
    pub(super) launch: Rect,
    /// Mapple's `Backpressure` limit for the task, if any.
    pub(super) limit: Option<u64>,
    /// Where its points ran is recorded.
    pub(super) recorded: bool,
}

impl Driver {
    /// Keeps a launch's future map until what waits for it has (outside any trace: waiting
    /// inside one would break its replay): recorded points read back, a `Backpressure` limit
    /// held, the next settle.
    pub(super) fn track(&mut self, launched: Launched, shared: &Shared) {
        let Launched {
            futures,
            name,
            launch,
            limit,
            recorded,
        } = launched;
        if recorded {
            self.record_points(futures, &name, &launch, shared);
        }
        let api = self.api;
        // SAFETY: each future map is destroyed once: here, by a later launch of the task
        // under a limit, or by the settle that waits for it.
        unsafe {
            match limit {
                Some(limit) => {
                    let queue = self.in_flight.entry(name).or_default();
                    queue.push_back(futures);
                    while queue.len() as u64 > limit {
                        if let Some(oldest) = queue.pop_front() {
                            shared.counters.held_back();
                            api.legion_future_map_wait_all_results(oldest);
                            api.legion_future_map_destroy(oldest);
                        }
                    }
                }
                None if !self.replicated => self.unwaited.push(futures),
                None => api.legion_future_map_destroy(futures),
            }
        }
    }

    /// Records where every point of a launch ran, from the points' values (each point task
    /// returns its processor; in a multi-process run the value comes from the node that ran
    /// it). Waits for the launch: recording is for tests and diagnostics.
    fn record_points(
        &self,
        futures: ffi::legion_future_map_t,
        name: &str,
        launch: &Rect,
        shared: &Shared,
    ) {
        let api = self.api;
        for p in launch.points() {
            // SAFETY: the future map is alive; every future is destroyed after its value
            // (a `diffuse_proc_choice_t`, checked by size) was copied out.
            let who = unsafe {
                let f = api.legion_future_map_get_future(futures, domain_point(&p));
                let value = api.legion_future_get_untyped_pointer(f);
                let size = api.legion_future_get_untyped_size(f);
                let who = (!value.is_null()
                    && size == std::mem::size_of::<ffi::diffuse_proc_choice_t>())
                .then(|| std::ptr::read_unaligned(value as *const ffi::diffuse_proc_choice_t));
                api.legion_future_destroy(f);
                who
            };
            if let Some(who) = who.filter(|w| w.kind >= 0) {
                shared.record(PointRecord {
                    task: name.to_string(),
                    point: p,
                    processor: Processor {
                        kind: proc_kind(who.kind),
                        node: who.node as usize,
                        index: who.index as usize,
                    },
                });
            }
        }
    }

    /// Waits until every operation issued so far has finished and takes back the regions
    /// of the stores dead by then: what the application's flush asks for.
    pub(crate) fn settle(&mut self) {
        self.fence();
        self.release_dead();
    }

    /// Waits until every launch issued so far has finished: in a single process by waiting
    /// for their future maps (what else the driver issues, fills of new regions and region
    /// deletions, either precedes a launch that uses the region or is ordered before the
    /// inline mapping that reads it); in a replicated run, where a process holds the futures
    /// of its own points only, by an execution fence.
    fn fence(&mut self) {
        // SAFETY: as above; each future map is destroyed once (the limited ones by the
        // launch that takes them out of their queue, or at shutdown).
        unsafe {
            if self.replicated {
                let f = self
                    .api
                    .legion_runtime_issue_execution_fence(self.runtime, self.ctx);
                self.api.legion_future_get_void_result(f);
                self.api.legion_future_destroy(f);
            } else {
                for futures in self.unwaited.drain(..) {
                    self.api.legion_future_map_wait_all_results(futures);
                    self.api.legion_future_map_destroy(futures);
                }
                // Launches under a `Backpressure` limit stay in their task's queue, finished:
                // the task's next launches still find them there (and destroy them), so a
                // settle in between, from any thread, does not change what they wait for.
                for &futures in self.in_flight.values().flatten() {
                    self.api.legion_future_map_wait_all_results(futures);
                }
            }
        }
        LaunchEntry::retire(self.unfenced.drain(..));
        (self.thread.synced)();
    }

    /// Finishes outstanding work, ends the top-level task and waits for Legion to stop.
    pub(crate) fn shutdown(&mut self) {
        if self.stopped {
            return;
        }
        self.fence();
        // SAFETY: as above; nothing uses the context afterwards (`stopped`).
        unsafe {
            for (_, queue) in self.in_flight.drain() {
                for futures in queue {
                    self.api.legion_future_map_destroy(futures);
                }
            }
            self.api
                .diffuse_legion_finish_implicit_task(self.runtime, self.ctx);
            self.api.legion_runtime_wait_for_shutdown();
        }
        self.stopped = true;
    }
}
