//! `harnessx runs fork ID --at TURN --durable FILE [agent flags]`: a new durable run in
//! the same journal from run ID's turns before TURN (copied: no call of theirs runs
//! again), asked anew from TURN by the agent the flags make
//! (`harnessx::durable::AgentRuntime::fork`), and printed as `run --durable` prints its
//! run. (A Restate cluster keeps its runs' journals itself: `--restate` is refused.)

use std::process::ExitCode;

use clap::Args;
use harnessx::durable::{DurableError, StartOptions};

use crate::backend::local;
use crate::backend::place::Place;
use crate::error::CliError;
use crate::report::{self, Next};
use crate::setup::flags::AgentArgs;
use crate::setup::{Approvals, build_agent};

#[derive(Debug, Args)]
pub(crate) struct ForkArgs {
    /// The run to fork (`harnessx runs list` shows them).
    run_id: String,
    /// The first turn asked anew, from 1 (the turns `runs show` counts): the turns before
    /// it are copied from the run's journal, their calls' results with them, and no call
    /// of theirs runs again. 1 copies the prompt alone.
    #[arg(long, value_name = "TURN")]
    at: u32,
    #[command(flatten)]
    pub(crate) place: Place,
    /// The new run's id (default: run-MILLIS-PID).
    #[arg(long = "run-id", value_name = "ID")]
    new_id: Option<String>,
    /// Print one JSON object: run_id, status, output, needs_input (as `run --durable`).
    #[arg(long)]
    json: bool,
    /// The agent that goes on from TURN: the new run is fingerprinted with it (resume it
    /// with the same flags); its limits and price are the new run's.
    #[command(flatten)]
    pub(crate) agent: AgentArgs,
}

/// `runs fork ID --at TURN --durable FILE`.
pub(crate) async fn fork(args: ForkArgs) -> Result<ExitCode, CliError> {
    let path = args.place.journal_path("fork")?;
    let new_id = crate::cmd::run::run_id(args.new_id.clone())?;
    // The source and its turn, checked before an agent is built (its MCP servers
    // started): a run or a turn that is not there is said in one line.
    let (reader, _) = local::runtime(local::existing(path)?, None)?;
    reader.can_fork(&args.run_id, args.at).map_err(|e| match e {
        DurableError::NoSuchTurn { .. } => CliError::usage(format!("{e} (--at)")),
        e => CliError::failed(e),
    })?;
    let built = build_agent(&args.agent, true, Approvals::here(args.agent.yes)).await?;
    let (runtime, agent) = local::runtime(local::existing(path)?, Some(built))?;
    let options = StartOptions {
        output: None,
        limits: Some(args.agent.limit_changes()).filter(|l| !l.is_empty()),
        price: args.agent.price,
        progress: None,
    };
    errln!("harnessx: run id {new_id} (forked from {} at turn {})", args.run_id, args.at);
    let outcome = runtime.fork(&args.run_id, args.at, &new_id, options, None).await;
    // Nothing more runs here: the agent's MCP servers stop.
    agent.close().await;
    let state = runtime.settled(&new_id, outcome).map_err(|e| match e {
        DurableError::NoSuchTurn { .. } => CliError::usage(e),
        e => CliError::failed(e),
    })?;
    let next = Next::Journal { journal: path.to_owned(), flags: args.agent.to_flags() };
    Ok(report::print(&state, &next, args.json))
}
