//! What the Legion backend does with each kind of mapping decision (declared whether or not
//! Legion is installed, so that mappers can be explained anywhere).

use diffuse_backend::{Capabilities, Directive, Effect, StealScope};

/// The Legion backend's declaration: its mapper carries out every decision Mapple expresses.
pub const CAPABILITIES: Capabilities = Capabilities::new("legion", effect);

fn effect(directive: Directive) -> Effect {
    match directive {
        Directive::Placement(placing) => Effect::placed(placing),
        Directive::RegionMemory => Effect::acts("chooses the memory of the region's instance"),
        Directive::Layout { column_major: true } => Effect::acts(
            "alignment applies; F_order is kept C order (kernels need the last dimension contiguous)",
        ),
        Directive::Layout { column_major: false } => {
            Effect::acts("sets the instance layout (C order, alignment)")
        }
        Directive::GarbageCollect => {
            Effect::acts("collects the region's instance eagerly after the task")
        }
        Directive::Backpressure => Effect::acts("at most this many launches of the task in flight"),
        Directive::ControlReplicate => Effect::acts(
            "the top-level program that issues the tasks runs control replicated: one shard per \
             process of a multi-process run (`diffuse launch`), every launch issued by all \
             shards and run once (a single process is one shard)",
        ),
        Directive::TaskSteal(StealScope::SameNode) => Effect::acts(
            "the task's points are stealable: each is mapped onto the least loaded \
             processor of the kind on its node instead of queueing where it was placed, \
             and idle processors of the point's node may steal unmapped ones",
        ),
        Directive::TaskSteal(StealScope::AnyNode) => Effect::acts(
            "the task's points are stealable: each is mapped onto the least loaded \
             processor of the kind on its node instead of queueing where it was placed, \
             and idle processors of any node may steal unmapped ones",
        ),
    }
}
