//! Placeholder until the application is written in this session.
use crate::common::{AppArgs, RunRecord};
/// Not written yet.
pub fn run(_args: &AppArgs) -> anyhow::Result<RunRecord> {
    anyhow::bail!("not written yet")
}
