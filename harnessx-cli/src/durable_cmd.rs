//! Durable runs from the command line: `run --durable FILE`, `resume`, `approve` and
//! `answer`, over `harnessx::durable::AgentRuntime` and a SQLite journal.
//!
//! A run that stops to wait (an ASK call with no one to approve it, or a `manual` call
//! whose outcome is unknown) exits with [`NEEDS_INPUT`] and prints the commands that
//! continue it. `resume` builds its agent from the flags given again on its own command
//! line; the journal's fingerprint (tools, model, system prompt) refuses another agent.
//! What the fingerprint does not cover (`--base-path`, the permission flags, `--yes`) is
//! the caller's to repeat, which is why the printed `resume` command repeats every flag.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, ValueEnum};
use harnessx::ApprovalDecision;
use harnessx::agent::{Agent, NeedsInput, NeedsInputKind, RunResult};
use harnessx::durable::{AgentRuntime, DurableError, RunStatus, SqliteJournal};
use serde_json::json;

use crate::CliError;
use crate::restate_cmd::{Cluster, Flags};
use crate::run_cmd::{AgentArgs, build_agent};

/// The exit status of a run that stopped to wait for input.
pub(crate) const NEEDS_INPUT: u8 = 3;

/// The journal file of a command that reads an existing journal.
#[derive(Debug, Clone, Args)]
pub(crate) struct JournalArg {
    /// The journal (SQLite file) the run was started with (`run --durable FILE`).
    #[arg(long = "durable", value_name = "FILE")]
    pub(crate) path: PathBuf,
}

impl JournalArg {
    /// The journal, which must exist: these commands never create one.
    pub(crate) fn open(&self) -> Result<SqliteJournal, CliError> {
        if !self.path.is_file() {
            return Err(CliError::Failed(format!("no journal at {}", self.path.display())));
        }
        open_journal(&self.path)
    }
}

fn open_journal(path: &Path) -> Result<SqliteJournal, CliError> {
    SqliteJournal::open(path).map_err(|e| CliError::Failed(format!("the journal at {}: {e}", path.display())))
}

/// A runtime for the commands that only read or answer a journal (`approve`, `answer`,
/// `runs`): those never ask the agent anything (no fingerprint check, no model), so an
/// empty one stands in for the run's.
pub(crate) fn journal_runtime(journal: &JournalArg) -> Result<AgentRuntime, CliError> {
    let journal = journal.open()?;
    let agent = Agent::builder().build().map_err(CliError::failed)?;
    Ok(AgentRuntime::new(agent, Arc::new(journal)))
}

/// Where a run lives, for the commands that continue or answer one: a journal file or a
/// Restate cluster.
#[derive(Debug, Clone, Args)]
pub(crate) struct Backend {
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

impl Backend {
    /// The cluster, when the run is on one.
    async fn cluster(&self, agent: Option<&AgentArgs>) -> Result<Option<Cluster>, CliError> {
        match &self.restate {
            Some(url) => {
                Cluster::new(url, self.restate_admin.as_deref(), agent, Flags::Refused).await.map(Some)
            }
            None => Ok(None),
        }
    }

    /// The journal, when the run is in one.
    fn journal(&self) -> JournalArg {
        JournalArg { path: self.path.clone().expect("clap requires --durable without --restate") }
    }
}

#[derive(Debug, Args)]
pub(crate) struct ResumeArgs {
    /// The run's id (`harnessx runs list` shows them).
    run_id: String,
    #[command(flatten)]
    backend: Backend,
    /// Print one JSON object: run_id, status, output, needs_input.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    agent: AgentArgs,
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
    backend: Backend,
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
    backend: Backend,
}

/// `run --durable FILE`: starts a journaled run.
pub(crate) async fn start(
    agent: Agent,
    flags: &AgentArgs,
    journal: &Path,
    run_id: Option<String>,
    prompt: &str,
    json: bool,
) -> Result<ExitCode, CliError> {
    let run_id = run_id.unwrap_or_else(new_run_id);
    if run_id.trim().is_empty() {
        return Err(CliError::Usage("--run-id must not be empty".into()));
    }
    let runtime = AgentRuntime::new(agent, Arc::new(open_journal(journal)?));
    errln!("harnessx: run id {run_id}");
    let outcome = runtime.start(&run_id, prompt).await;
    // Stops its MCP servers.
    runtime.agent().close().await;
    report(&runtime, &Continue { run_id: &run_id, journal, flags }, outcome, json)
}

/// `resume ID --durable FILE`.
pub(crate) async fn resume(args: ResumeArgs) -> Result<ExitCode, CliError> {
    if let Some(cluster) = args.backend.cluster(Some(&args.agent)).await? {
        return cluster.resume(&args.run_id, args.json).await;
    }
    let journal_arg = args.backend.journal();
    let journal = journal_arg.open()?;
    let agent = build_agent(&args.agent, true).await?;
    let runtime = AgentRuntime::new(agent, Arc::new(journal));
    let outcome = runtime.resume(&args.run_id).await;
    runtime.agent().close().await;
    let next = Continue { run_id: &args.run_id, journal: &journal_arg.path, flags: &args.agent };
    report(&runtime, &next, outcome, args.json)
}

/// `approve RUN CALL --durable FILE [--decision ...]`.
pub(crate) async fn approve(args: ApproveArgs) -> Result<ExitCode, CliError> {
    if let Some(cluster) = args.backend.cluster(None).await? {
        return cluster.approve(&args.run_id, &args.call_id, args.decision.into()).await;
    }
    let journal = args.backend.journal();
    let runtime = journal_runtime(&journal)?;
    runtime.approve(&args.run_id, &args.call_id, args.decision.into()).map_err(CliError::failed)?;
    let decision = args.decision.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default();
    errln!(
        "harnessx: recorded {decision} for call {} of run {}; continue it with: harnessx resume {} --durable {} (and the run's flags)",
        args.call_id,
        args.run_id,
        shell_word(&args.run_id),
        shell_word(&journal.path.display().to_string()),
    );
    Ok(ExitCode::SUCCESS)
}

/// `answer RUN CALL TEXT --durable FILE`.
pub(crate) async fn answer(args: AnswerArgs) -> Result<ExitCode, CliError> {
    if let Some(cluster) = args.backend.cluster(None).await? {
        return cluster.answer(&args.run_id, &args.call_id, &args.text).await;
    }
    let journal = args.backend.journal();
    let runtime = journal_runtime(&journal)?;
    runtime.answer(&args.run_id, &args.call_id, &args.text).map_err(CliError::failed)?;
    errln!(
        "harnessx: recorded the answer for call {} of run {}; continue it with: harnessx resume {} --durable {} (and the run's flags)",
        args.call_id,
        args.run_id,
        shell_word(&args.run_id),
        shell_word(&journal.path.display().to_string()),
    );
    Ok(ExitCode::SUCCESS)
}

/// What the printed commands need to continue a run.
struct Continue<'a> {
    run_id: &'a str,
    journal: &'a Path,
    flags: &'a AgentArgs,
}

impl Continue<'_> {
    fn journal(&self) -> String {
        shell_word(&self.journal.display().to_string())
    }

    fn resume_command(&self) -> String {
        let mut words = vec!["harnessx".to_owned(), "resume".into(), shell_word(self.run_id)];
        words.extend(["--durable".to_owned(), self.journal()]);
        words.extend(self.flags.to_flags().iter().map(|f| shell_word(f)));
        words.join(" ")
    }
}

/// Where a durable run stopped. (`json!` rather than a `Serialize` derive, which would need
/// `serde` as a dependency of this crate for two small objects.)
#[derive(Debug)]
struct Stopped<'a> {
    run_id: &'a str,
    status: RunStatus,
    /// The answer once completed, the error once failed.
    output: Option<String>,
    needs_input: Vec<NeedsInput>,
}

/// Prints where the run stands after `start` or `resume`, from its journal, and picks the
/// exit status: 0 completed, 1 failed, [`NEEDS_INPUT`] waiting.
fn report(
    runtime: &AgentRuntime,
    next: &Continue<'_>,
    outcome: Result<RunResult, DurableError>,
    json: bool,
) -> Result<ExitCode, CliError> {
    let failure = match outcome {
        Ok(_) => None,
        // The run is marked failed in the journal and can be resumed.
        Err(DurableError::Agent(e)) => Some(e.to_string()),
        // Nothing ran: a refused resume, an id in use, a journal that cannot be written.
        Err(e) => return Err(CliError::failed(e)),
    };
    let report = runtime.status(next.run_id).map_err(CliError::failed)?;
    let (status, output) = match failure {
        // Marking it failed is best effort; the error is what the caller needs to see.
        Some(error) => (RunStatus::Failed, Some(error)),
        None => (report.run.status, report.run.output.clone()),
    };
    let stopped = Stopped { run_id: next.run_id, status, output, needs_input: report.state.needs_input };
    if json {
        let object = json!({
            "run_id": stopped.run_id,
            "status": stopped.status,
            "output": stopped.output,
            "needs_input": stopped.needs_input,
        });
        outln!("{object}");
    } else {
        print_stopped(&stopped, next);
    }
    Ok(match stopped.status {
        RunStatus::Completed => ExitCode::SUCCESS,
        RunStatus::NeedsInput => ExitCode::from(NEEDS_INPUT),
        RunStatus::Failed | RunStatus::Running => ExitCode::FAILURE,
    })
}

fn print_stopped(stopped: &Stopped<'_>, next: &Continue<'_>) {
    let output = stopped.output.as_deref().unwrap_or("");
    match stopped.status {
        RunStatus::Completed => outln!("{output}"),
        RunStatus::Failed => {
            errln!("harnessx: the run failed: {output}");
            errln!("harnessx: resume it with: {}", next.resume_command());
        }
        RunStatus::Running => {
            errln!(
                "harnessx: run {} stopped while running; resume it with: {}",
                next.run_id,
                next.resume_command()
            );
        }
        RunStatus::NeedsInput => {
            errln!("harnessx: run {} is waiting for input:", next.run_id);
            for n in &stopped.needs_input {
                errln!("  {}", awaited(n));
                errln!("    {}", n.reason);
            }
            errln!("Then continue it:");
            for n in &stopped.needs_input {
                let (run, call) = (shell_word(next.run_id), shell_word(&n.call_id));
                match n.kind {
                    NeedsInputKind::Approval => errln!(
                        "  harnessx approve {run} {call} --durable {} [--decision approve|session|deny]",
                        next.journal()
                    ),
                    NeedsInputKind::Outcome => {
                        errln!("  harnessx answer {run} {call} 'WHAT HAPPENED' --durable {}", next.journal())
                    }
                }
            }
            errln!("  {}", next.resume_command());
        }
    }
}

/// One line: what kind of input, for which call.
pub(crate) fn awaited(n: &NeedsInput) -> String {
    format!(
        "{} of call {}: {} {}",
        kind_name(n.kind),
        n.call_id,
        n.tool,
        crate::run_cmd::one_line(&n.arguments, 200)
    )
}

/// The kind as `--json` spells it: `approval` or `outcome`.
pub(crate) fn kind_name(kind: NeedsInputKind) -> &'static str {
    match kind {
        NeedsInputKind::Approval => "approval",
        NeedsInputKind::Outcome => "outcome",
    }
}

/// A new run id: `run-` + milliseconds since the epoch + `-` + the process id.
pub(crate) fn new_run_id() -> String {
    format!("run-{}-{}", harnessx::time::now_unix_ms(), std::process::id())
}

/// `word` as one word of a POSIX shell command line: as is when it is plain, else single-quoted.
pub(crate) fn shell_word(word: &str) -> String {
    let plain =
        !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c));
    if plain { word.to_owned() } else { format!("'{}'", word.replace('\'', r"'\''")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_quote_only_what_the_shell_would_split_or_expand() {
        assert_eq!(shell_word("run-1-2"), "run-1-2");
        assert_eq!(shell_word("dir/runs.db"), "dir/runs.db");
        assert_eq!(shell_word("my runs.db"), "'my runs.db'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word("$HOME"), "'$HOME'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn new_run_ids_are_printable_words() {
        let id = new_run_id();
        assert!(id.starts_with("run-"), "{id}");
        assert_eq!(shell_word(&id), id);
    }
}
