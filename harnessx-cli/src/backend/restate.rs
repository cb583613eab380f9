//! Runs on a Restate cluster (`--restate URL`), over `harnessx::durable::restate`: the
//! cluster's workers (`harnessx worker`) drive them with their own agent; this starts,
//! follows and answers them. A waiting run goes on by itself once answered; `resume`
//! only follows it (and raises the limit of a run stopped at one).

use harnessx::durable::restate::{RestateRuntime, WorkerConfig};

use super::Backend;
use crate::error::CliError;
use crate::report::Next;

/// The cluster at `ingress` (and, to say why a run is stuck, its `admin` API); runs
/// started here ask for workers with the configuration `expect`, when given.
pub(crate) fn backend(
    ingress: &str,
    admin: Option<&str>,
    expect: Option<WorkerConfig>,
    blob_store: Option<&std::path::Path>,
) -> Result<Backend, CliError> {
    let mut runtime = RestateRuntime::new(ingress).map_err(CliError::usage)?.expecting(expect);
    if let Some(dir) = blob_store {
        runtime = runtime
            .blob_store(dir)
            .map_err(|e| CliError::Usage(format!("--blob-store {}: {e}", dir.display())))?;
    }
    if let Some(admin) = admin {
        runtime = runtime.with_admin(admin).map_err(CliError::usage)?;
    }
    Ok(Backend {
        runs: Box::new(runtime),
        next: Next::Cluster { ingress: ingress.to_owned() },
        agent: None,
        shown_as: format!(" on {ingress}"),
    })
}

/// The error of `runs list|show` with `--restate`.
pub(crate) fn no_journal(command: &str) -> CliError {
    CliError::Usage(format!(
        "`runs {command}` reads a journal (--durable FILE); a Restate cluster keeps its runs' journals itself: `harnessx resume ID --restate URL --json` says where a run stands"
    ))
}
