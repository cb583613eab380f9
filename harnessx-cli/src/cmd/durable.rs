//! `resume`, `approve` and `answer`: continuing a durable run where it lives
//! (`--durable FILE` or `--restate URL`, a [`Place`]).
//!
//! A run that stops to wait (an ASK call with no one to approve it, or a `manual` call
//! whose outcome is unknown) exits with [`NEEDS_INPUT`](crate::report::NEEDS_INPUT)
//! and prints the commands that continue it.

use std::process::ExitCode;

use clap::{Args, ValueEnum};
use harnessx::ApprovalDecision;
use harnessx::durable::ResumeOptions;

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
    /// Do not run it (the model is told "Permission denied", or --message).
    Deny,
}

impl Decision {
    /// The decision with its `--arguments` and `--message`: arguments go with approve or
    /// session (the call runs with them), a message with deny (the model reads it).
    fn with(self, arguments: Option<&str>, message: Option<&str>) -> Result<ApprovalDecision, CliError> {
        let edited = match arguments {
            None => None,
            Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
                Ok(value @ serde_json::Value::Object(_)) => Some(value),
                Ok(_) => {
                    return Err(CliError::Usage(
                        "--arguments must be a JSON object, e.g. '{\"path\": \"a.txt\"}'".into(),
                    ));
                }
                Err(e) => return Err(CliError::Usage(format!("--arguments is not valid JSON: {e}"))),
            },
        };
        Ok(match (self, edited, message) {
            (Decision::Deny, Some(_), _) => {
                return Err(CliError::Usage(
                    "--arguments goes with --decision approve or session (run the call with them), not deny"
                        .into(),
                ));
            }
            (Decision::Approve | Decision::Session, _, Some(_)) => {
                return Err(CliError::Usage(
                    "--message goes with --decision deny (the model reads it instead of \"Permission denied\")".into(),
                ));
            }
            (Decision::Approve, None, None) => ApprovalDecision::Approve,
            (Decision::Session, None, None) => ApprovalDecision::ApproveForSession,
            (Decision::Approve, Some(arguments), None) => {
                ApprovalDecision::ApproveEdited { arguments, for_session: false }
            }
            (Decision::Session, Some(arguments), None) => {
                ApprovalDecision::ApproveEdited { arguments, for_session: true }
            }
            (Decision::Deny, None, None) => ApprovalDecision::Deny,
            (Decision::Deny, None, Some(message)) => {
                ApprovalDecision::DenyWithMessage { message: message.to_owned() }
            }
        })
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
    /// With approve or session: run the call with these arguments (a JSON object)
    /// instead of the model's; they are validated against the tool's schema and the
    /// rules again, and the model is told the user changed them.
    #[arg(long, value_name = "JSON")]
    arguments: Option<String>,
    /// With deny: what the model is told instead of "Permission denied".
    #[arg(long, value_name = "TEXT")]
    message: Option<String>,
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
    // The limit flags and --price given here are the run's from now on (journaled); a
    // cluster's run stopped at a limit is given them.
    let options = ResumeOptions {
        limits: args.agent.limit_changes(),
        price: args.agent.price,
        progress: crate::cmd::run::progress(args.json),
    };
    let state = backend.resume(&args.run_id, options).await?;
    Ok(report::print(&state, &backend.next(), args.json))
}

/// `approve RUN CALL --durable FILE | --restate URL [--decision ...] [--arguments JSON]
/// [--message TEXT]`.
pub(crate) async fn approve(args: ApproveArgs) -> Result<ExitCode, CliError> {
    let decision = args.decision.with(args.arguments.as_deref(), args.message.as_deref())?;
    let backend = args.place.open()?;
    backend.approve(&args.run_id, &args.call_id, decision).await?;
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
