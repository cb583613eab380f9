//! `--durable FILE | --restate URL`: where the run of `resume`, `approve`, `answer` and
//! `runs` lives, opened as a [`Backend`].

use std::path::{Path, PathBuf};

use clap::Args;
use harnessx::durable::AgentRuntime;

use super::{Backend, local, restate};
use crate::error::CliError;
use crate::setup::flags::AgentArgs;
use crate::setup::{Approvals, build_agent};

/// Where a run lives, for the commands that continue, answer or show one: a journal
/// file or a Restate cluster.
#[derive(Debug, Clone, Args)]
pub(crate) struct Place {
    /// The journal (SQLite file) the run was started with (`run --durable FILE`).
    #[arg(
        long = "durable",
        value_name = "FILE",
        required_unless_present = "restate",
        conflicts_with = "restate"
    )]
    path: Option<PathBuf>,
    /// The ingress URL of the Restate cluster the run was started on (`run --restate URL`).
    #[arg(long, value_name = "URL")]
    restate: Option<String>,
    /// With --restate: the cluster's admin API, asked why a run is stuck.
    #[arg(long, value_name = "URL", requires = "restate")]
    restate_admin: Option<String>,
}

impl Place {
    /// Whether the run lives on a Restate cluster (whose workers have their own agent
    /// flags: configuration files do not apply).
    pub(crate) fn is_cluster(&self) -> bool {
        self.restate.is_some()
    }

    /// The backend, for a command that asks no agent anything (`approve`, `answer`). A
    /// journal must exist.
    pub(crate) fn open(&self) -> Result<Backend, CliError> {
        match (&self.restate, &self.path) {
            (Some(ingress), _) => restate::backend(ingress, self.restate_admin.as_deref(), None, None),
            (None, Some(path)) => local::backend(path, local::existing(path)?, None, Vec::new()),
            (None, None) => unreachable!("clap requires --durable without --restate"),
        }
    }

    /// The journal's runtime for `runs COMMAND` (which must exist; a cluster keeps its
    /// runs' journals itself: a usage error).
    pub(crate) fn journal(&self, command: &str) -> Result<AgentRuntime, CliError> {
        Ok(local::runtime(local::existing(self.journal_path(command)?)?, None)?.0)
    }

    /// The journal's file for `runs COMMAND` (a cluster keeps its runs' journals itself:
    /// a usage error).
    pub(crate) fn journal_path(&self, command: &str) -> Result<&Path, CliError> {
        match (&self.restate, &self.path) {
            (Some(_), _) => Err(restate::no_journal(command)),
            (None, Some(path)) => Ok(path),
            (None, None) => unreachable!("clap requires --durable without --restate"),
        }
    }

    /// The backend for `resume`: a journal's run is driven here by the agent `agent`
    /// makes (built once the journal is found); a cluster's goes on with its workers'
    /// agent, so agent flags are refused.
    pub(crate) async fn open_to_resume(&self, agent: &AgentArgs) -> Result<Backend, CliError> {
        match (&self.restate, &self.path) {
            (Some(ingress), _) => {
                if let Some(flag) = agent.given().first() {
                    return Err(CliError::Usage(format!(
                        "{} has no effect with --restate: the run goes on on the cluster's workers, with their agent flags",
                        flag.name
                    )));
                }
                restate::backend(ingress, self.restate_admin.as_deref(), None, None)
            }
            (None, Some(path)) => {
                let journal = local::existing(path)?;
                let built = build_agent(agent, true, Approvals::here(agent.yes)).await?;
                local::backend(path, journal, Some(built), agent.to_flags())
            }
            (None, None) => unreachable!("clap requires --durable without --restate"),
        }
    }
}
