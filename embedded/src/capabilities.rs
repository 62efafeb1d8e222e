//! What the embedded backend does with each kind of mapping decision.

use diffuse_backend::{Capabilities, Directive, Effect};

/// The embedded backend's declaration: it places every point where the mapper says, keeps
/// data in host memory, and has nothing to replicate, collect early or steal.
pub const CAPABILITIES: Capabilities = Capabilities::new("embedded", effect);

fn effect(directive: Directive) -> Effect {
    match directive {
        Directive::Placement(placing) => Effect::placed(placing),
        Directive::RegionMemory => Effect::acts(
            "recorded as the region's memory; data stays in host memory, GPU points copy in",
        ),
        Directive::Layout { .. } => {
            Effect::inert("host buffers are always C order with 64-byte alignment")
        }
        Directive::GarbageCollect => {
            Effect::inert("a store's buffer is freed as soon as its last handle goes")
        }
        Directive::Backpressure => {
            Effect::inert("launches run one at a time, so at most one is in flight")
        }
        Directive::ControlReplicate => {
            Effect::inert("one process with one driver: there is nothing to replicate")
        }
        Directive::TaskSteal(_) => Effect::inert(
            "every point runs on the worker of the processor its mapping names; the embedded \
             backend does not steal",
        ),
    }
}
