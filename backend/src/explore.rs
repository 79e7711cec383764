//! TEMPORARY STUB written by the lead so the crate compiles; the world/explorer helper replaces this file.
#[derive(clap::Args, Debug)]
pub struct ExploreArgs {
    pub file: Option<std::path::PathBuf>,
}
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ExploreError(pub String);
pub fn run(_args: &ExploreArgs) -> Result<String, ExploreError> {
    Err(ExploreError("the explorer is not built yet".into()))
}
