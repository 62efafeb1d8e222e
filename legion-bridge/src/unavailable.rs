//! The backend on a build without Legion: starting it names what is missing.

use diffuse_backend::Processor;
use diffuse_ir::{IrError, Point};

use crate::LegionConfig;

/// Where one point task ran (never produced without Legion).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointRecord {
    /// The task's name.
    pub task: String,
    /// The launch point.
    pub point: Point,
    /// The processor it ran on.
    pub processor: Processor,
}

/// Nothing to shut down in a build without Legion.
pub fn shutdown() {}

/// The Legion backend of a build that found no Legion: it cannot start (no value exists).
pub struct LegionBackend {
    never: std::convert::Infallible,
}

impl LegionBackend {
    /// Fails: this build has no Legion.
    pub fn start(_config: &LegionConfig) -> Result<Self, IrError> {
        Err(IrError::Backend {
            backend: "legion".into(),
            message: format!(
                "diffuse-legion was built without Legion: {}",
                env!("DIFFUSE_LEGION_MISSING")
            ),
        })
    }
}

impl LegionBackend {
    /// Never called: no value of this type exists.
    pub fn flags(&self) -> &[String] {
        match self.never {}
    }

    /// Never called: no value of this type exists.
    pub fn cluster(&self) -> &crate::Cluster {
        match self.never {}
    }

    /// Never called: no value of this type exists.
    pub fn held_back_launches(&self) -> u64 {
        match self.never {}
    }

    /// Never called: no value of this type exists.
    pub fn traced_launches(&self) -> u64 {
        match self.never {}
    }

    /// Never called: no value of this type exists.
    pub fn point_variant_kinds(&self) -> Vec<diffuse_backend::ProcKind> {
        match self.never {}
    }

    /// Never called: no value of this type exists.
    pub fn traces_made(&self) -> Result<usize, IrError> {
        match self.never {}
    }

    /// Never called: no value of this type exists.
    pub fn record_points(&self) {
        match self.never {}
    }

    /// Never called: no value of this type exists.
    pub fn take_point_records(&self) -> Vec<PointRecord> {
        match self.never {}
    }
}

impl diffuse_backend::Backend for LegionBackend {
    fn name(&self) -> &str {
        match self.never {}
    }
    fn machine(&self) -> diffuse_backend::MachineShape {
        match self.never {}
    }
    fn capabilities(&self) -> diffuse_backend::Capabilities {
        match self.never {}
    }
    fn execute(&self, _plan: &diffuse_backend::LaunchPlan) -> Result<(), IrError> {
        match self.never {}
    }
    fn flush(&self) -> Result<(), IrError> {
        match self.never {}
    }
    fn read(
        &self,
        _store: &diffuse_ir::StoreRef,
        _rect: diffuse_ir::Rect,
    ) -> Result<diffuse_ir::HostData, IrError> {
        match self.never {}
    }
    fn write(
        &self,
        _store: &diffuse_ir::StoreRef,
        _rect: diffuse_ir::Rect,
        _data: diffuse_ir::HostData,
    ) -> Result<(), IrError> {
        match self.never {}
    }
    fn stats(&self) -> diffuse_backend::BackendStats {
        match self.never {}
    }
    fn reset_peak_memory(&self) {
        match self.never {}
    }
}
