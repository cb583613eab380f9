//! Runs in a SQLite journal (`--durable FILE`), over `harnessx::durable::AgentRuntime`.
//!
//! A run is driven in this process, by the agent its flags make; `resume` builds that
//! agent again from the flags on its own command line, and the journal's fingerprint
//! (tools, model, system prompt) refuses another one. What the fingerprint does not
//! cover (`--base-path`, the permission flags, `--yes`) is the caller's to repeat, which
//! is why the printed `resume` command repeats every flag. The run's limits and price
//! are journaled with it: a `resume` without those flags keeps them.

use std::path::Path;
use std::sync::Arc;

use harnessx::agent::Agent;
use harnessx::durable::{AgentRuntime, SqliteJournal};

use super::Backend;
use crate::error::CliError;
use crate::report::Next;

/// The journal at `path`, created if missing (`run --durable FILE`; its folder must exist).
pub(crate) fn create(path: &Path) -> Result<SqliteJournal, CliError> {
    SqliteJournal::open(path).map_err(|e| CliError::Failed(format!("the journal at {}: {e}", path.display())))
}

/// The journal at `path`, which must exist: only `run` creates one.
pub(crate) fn existing(path: &Path) -> Result<SqliteJournal, CliError> {
    if !path.is_file() {
        return Err(CliError::Failed(format!("no journal at {}", path.display())));
    }
    create(path)
}

/// The runtime over `journal`, driven by `agent`. Without an agent (`approve`,
/// `answer`, `runs`, which never ask one anything: no fingerprint check, no model) an
/// empty one stands in.
pub(crate) fn runtime(
    journal: SqliteJournal,
    agent: Option<Agent>,
) -> Result<(AgentRuntime, Arc<Agent>), CliError> {
    let agent = Arc::new(match agent {
        Some(agent) => agent,
        None => Agent::builder().build().map_err(CliError::failed)?,
    });
    Ok((AgentRuntime::new(agent.clone(), Arc::new(journal)), agent))
}

/// Runs in `journal` (at `path`), driven by `agent` (made by `flags`, which the printed
/// `resume` command repeats).
pub(crate) fn backend(
    path: &Path,
    journal: SqliteJournal,
    agent: Option<Agent>,
    flags: Vec<String>,
) -> Result<Backend, CliError> {
    let (runtime, agent) = runtime(journal, agent)?;
    Ok(Backend {
        runs: Box::new(runtime),
        next: Next::Journal { journal: path.to_owned(), flags },
        agent: Some(agent),
        shown_as: String::new(),
    })
}
