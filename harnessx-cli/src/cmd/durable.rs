//! `resume`, `approve` and `answer`: continuing a durable run where it lives
//! (`--durable FILE` or `--restate URL`, a [`Place`]).
//!
//! A run that stops to wait (an ASK call with no one to approve it, or a `manual` call
//! whose outcome is unknown) exits with [`NEEDS_INPUT`](crate::report::NEEDS_INPUT)
//! and prints the commands that continue it.

use std::process::ExitCode;

use clap::{Args, ValueEnum};
use harnessx::ApprovalDecision;

use crate::backend::place::Place;
use crate::error::CliError;
use crate::report::{self, Recorded};
use crate::setup::flags::{AgentArgs, value_name};

#[derive(Debug, Args)]
pub(crate) struct ResumeArgs {
    /// The run's id (`harnessx runs list` shows them).
    run_id: String,
    #[command(flatten)]
    pub(crate) place: Place,
    /// Print one JSON object: run_id, status, output, needs_input.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pub(crate) agent: AgentArgs,
}

/// A decision as a flag value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Decision {
    /// Run the call.
    Approve,
    /// Run it, and grant the tool for the rest of the run.
    Session,
    /// Do not run it (the model is told "Permission denied").
    Deny,
}

impl From<Decision> for ApprovalDecision {
    fn from(d: Decision) -> Self {
        match d {
            Decision::Approve => Self::Approve,
            Decision::Session => Self::ApproveForSession,
            Decision::Deny => Self::Deny,
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct ApproveArgs {
    /// The run's id.
    run_id: String,
    /// The id of the call the run waits on (printed when it stopped; `runs show` too).
    call_id: String,
    #[command(flatten)]
    place: Place,
    /// What to decide.
    #[arg(long, value_enum, default_value = "approve", value_name = "DECISION")]
    decision: Decision,
}

#[derive(Debug, Args)]
pub(crate) struct AnswerArgs {
    /// The run's id.
    run_id: String,
    /// The id of the call whose outcome is unknown.
    call_id: String,
    /// Whether it took effect and what it did: this becomes the call's result for the model.
    text: String,
    #[command(flatten)]
    place: Place,
}

/// `resume ID --durable FILE | --restate URL`.
pub(crate) async fn resume(args: ResumeArgs) -> Result<ExitCode, CliError> {
    let backend = args.place.open_to_resume(&args.agent).await?;
    let state = backend.resume(&args.run_id, !args.json).await?;
    Ok(report::print(&state, &backend.next(), args.json))
}

/// `approve RUN CALL --durable FILE | --restate URL [--decision ...]`.
pub(crate) async fn approve(args: ApproveArgs) -> Result<ExitCode, CliError> {
    let backend = args.place.open()?;
    backend.approve(&args.run_id, &args.call_id, args.decision.into()).await?;
    report::recorded(
        Recorded::Decision(value_name(args.decision)),
        &args.run_id,
        &args.call_id,
        &backend.next(),
    );
    Ok(ExitCode::SUCCESS)
}

/// `answer RUN CALL TEXT --durable FILE | --restate URL`.
pub(crate) async fn answer(args: AnswerArgs) -> Result<ExitCode, CliError> {
    let backend = args.place.open()?;
    backend.answer(&args.run_id, &args.call_id, &args.text).await?;
    report::recorded(Recorded::Answer, &args.run_id, &args.call_id, &backend.next());
    Ok(ExitCode::SUCCESS)
}
