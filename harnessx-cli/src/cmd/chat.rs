//! `harnessx chat`: a conversation that keeps going. Each prompt is one turn, a durable
//! run that continues the conversation of the turn before it
//! (`AgentRuntime::continue_conversation`), journaled in a SQLite file, so a conversation
//! survives a crash and goes on later with `--session ID`.
//!
//! The turns of conversation `ID` are the runs `ID.1`, `ID.2`, ... of the journal
//! (`harnessx runs list --durable FILE` shows them). Ctrl-C stops the turn that is running
//! (its run is marked failed, and the conversation goes on from the answer before it);
//! Ctrl-C at the prompt, or the end of input (Ctrl-D), ends the session. Continuing a
//! session whose last turn was cut off by a crash finishes that turn first.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::Args;
use harnessx::agent::{AgentEvent, Prompt, RunStatus};
use harnessx::durable::{AgentRuntime, DurableError, Entry, JournalStore, RunRecord, SqliteJournal};
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::cmd::run::Shown;
use crate::error::CliError;
use crate::report::{self, Next};
use crate::setup::attach::{self, AttachArgs};
use crate::setup::flags::AgentArgs;
use crate::setup::{Approvals, build_agent};
use crate::terminal;
use crate::text::shell_word;

/// What a stopped turn's run says in the journal.
const STOPPED: &str = "stopped with Ctrl-C";

#[derive(Debug, Args)]
pub(crate) struct ChatArgs {
    /// Continue this conversation (its id is printed when it starts).
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// The journal the conversation is kept in (created if missing). Default:
    /// $XDG_STATE_HOME/harnessx/chat.db, else ~/.local/state/harnessx/chat.db.
    #[arg(long, value_name = "FILE")]
    durable: Option<PathBuf>,
    /// Print one JSON event per line instead of text, as `run --json` does.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pub(crate) agent: AgentArgs,
    /// `--attach FILE` (for the first message) and `--max-attach-bytes`; a line
    /// `/attach FILE` attaches a file to the next message.
    #[command(flatten)]
    attach: AttachArgs,
}

/// `harnessx chat`.
pub(crate) async fn chat(args: ChatArgs) -> Result<ExitCode, CliError> {
    let path = match &args.durable {
        Some(path) => path.clone(),
        None => default_journal()?,
    };
    let journal = SqliteJournal::open(&path)
        .map_err(|e| CliError::Failed(format!("the journal at {}: {e}", path.display())))?;
    let journal = Arc::new(journal);
    // Read and checked before anything starts: a file that cannot be attached is a
    // usage error. They go with the first message.
    let mut attached = args.attach.parts()?;
    // Known before anything starts: a bad --session is a usage error, not a dead agent.
    let (session, mut turns) = match &args.session {
        Some(id) => (id.clone(), turns_of(&journal.list_runs().map_err(CliError::failed)?, id, &path)?),
        None => (format!("chat-{}-{}", harnessx::time::now_unix_ms(), std::process::id()), Vec::new()),
    };
    let agent = build_agent(&args.agent, true, Approvals::here(args.agent.yes)).await?;
    let runtime = AgentRuntime::new(agent, journal);
    let mut sigint = signal(SignalKind::interrupt()).map_err(CliError::failed)?;
    let mut shown = Shown::new(args.json).with_limits(args.agent.run_limits());
    let again = continue_command(&session, args.durable.as_deref());
    let outcome = async {
        // A turn cut off by a crash (or waiting for an approval) goes on first.
        if let Some(last) = turns.last()
            && matches!(last.status, RunStatus::Running | RunStatus::NeedsInput)
        {
            errln!("harnessx: finishing turn {} of {session}, cut off before its answer", last.run_id);
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            let run = runtime.resume_with_events(&last.run_id, tx);
            let status = turn(&runtime, &last.run_id, run, rx, &mut shown, &mut sigint).await?;
            if status == Some(RunStatus::NeedsInput) {
                return waiting(&runtime, &last.run_id, &path).await;
            }
            turns = turns_of(&runtime.journal().list_runs().map_err(CliError::failed)?, &session, &path)?;
        } else if let Some(last) = turns.last() {
            errln!("harnessx: continuing {session} after turn {}", last.run_id);
        }
        errln!("harnessx: conversation {session}; Ctrl-C stops a turn, Ctrl-D ends; continue it later with: {again}");
        let mut previous = turns.iter().rev().find(|t| t.status == RunStatus::Completed).map(|t| t.run_id.clone());
        let mut next = turns.iter().filter_map(|t| number(&t.run_id, &session)).max().unwrap_or(0) + 1;
        loop {
            let prompt = tokio::select! {
                line = read_prompt() => line,
                _ = sigint.recv() => None,
            };
            let Some(prompt) = prompt else { break };
            if let Some(path) = attach_line(&prompt) {
                // A file for the next message; one that cannot be attached is said, and
                // the conversation goes on.
                if path.is_empty() {
                    errln!("harnessx: /attach needs a file: /attach FILE");
                    continue;
                }
                match attach::load(std::path::Path::new(path), args.attach.limit()) {
                    Ok(part) => {
                        errln!("harnessx: attached {} to the next message", part.label());
                        attached.push(part);
                    }
                    Err(e) => errln!("harnessx: {e}"),
                }
                continue;
            }
            if prompt.trim().is_empty() {
                continue;
            }
            let prompt = Prompt::new(prompt).with_parts(std::mem::take(&mut attached));
            let run_id = format!("{session}.{next}");
            next += 1;
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            let status = match &previous {
                Some(previous) => {
                    let run = runtime.continue_conversation(&run_id, previous, prompt, Some(tx));
                    turn(&runtime, &run_id, run, rx, &mut shown, &mut sigint).await?
                }
                None => {
                    let run = runtime.start_with_events(&run_id, prompt, tx);
                    turn(&runtime, &run_id, run, rx, &mut shown, &mut sigint).await?
                }
            };
            match status {
                Some(RunStatus::Completed) => previous = Some(run_id),
                Some(RunStatus::NeedsInput) => return waiting(&runtime, &run_id, &path).await,
                _ => {}
            }
        }
        Ok(ExitCode::SUCCESS)
    }
    .await;
    runtime.agent().close().await;
    if outcome.is_ok() {
        errln!("harnessx: continue this conversation with: {again}");
    }
    outcome
}

/// Drives one turn (`run`, the durable run `run_id`), showing its events as they come,
/// until it ends or Ctrl-C stops it. Returns its status (`None`: stopped, or failed
/// without a state).
async fn turn(
    runtime: &AgentRuntime,
    run_id: &str,
    run: impl Future<Output = Result<harnessx::agent::RunResult, DurableError>>,
    mut events: tokio::sync::mpsc::UnboundedReceiver<AgentEvent>,
    shown: &mut Shown,
    sigint: &mut Signal,
) -> Result<Option<RunStatus>, CliError> {
    let outcome = {
        let mut run = std::pin::pin!(run);
        loop {
            tokio::select! {
                biased;
                Some(event) = events.recv() => shown.event(event)?,
                _ = sigint.recv() => break None,
                outcome = &mut run => break Some(outcome),
            }
        }
        // A stopped run is dropped here, before anything waits for the terminal: a
        // question it was asking lets go of it.
    };
    while let Ok(event) = events.try_recv() {
        shown.event(event)?;
    }
    shown.flush();
    match outcome {
        None => {
            // The run's future is gone: mark it, so that it is not taken for a crash.
            let _ = runtime.journal().append(
                run_id,
                &[Entry::Failed { error: STOPPED.into() }],
                Some((RunStatus::Failed, Some(STOPPED.into()))),
            );
            errln!("harnessx: stopped turn {run_id}; the conversation goes on from the answer before it");
            Ok(None)
        }
        Some(Ok(state)) => Ok(Some(state.status)),
        Some(Err(DurableError::Agent(e))) => {
            if !shown.failed() {
                errln!("harnessx: turn {run_id} failed: {e}");
            }
            errln!("harnessx: the conversation goes on from the answer before it");
            Ok(None)
        }
        Some(Err(e)) => Err(CliError::failed(e)),
    }
}

/// A turn that waits for an approval or an answer: said as `run --durable` says it, and
/// the session ends (exit status 3); `chat --session` goes on once it is answered.
async fn waiting(runtime: &AgentRuntime, run_id: &str, path: &std::path::Path) -> Result<ExitCode, CliError> {
    let state = runtime.status(run_id).map_err(CliError::failed)?.state;
    Ok(report::print(&state, &Next::Journal { journal: path.to_owned(), flags: Vec::new() }, false))
}

/// The next prompt: a line of standard input (asked for with `> ` on a terminal), or
/// `None` at its end. Read through [`terminal::next_line`], which approval questions read
/// too; the read stops when this future is dropped (Ctrl-C at the prompt).
async fn read_prompt() -> Option<String> {
    let ask = terminal::interactive();
    let cancelled = Arc::new(AtomicBool::new(false));
    let _cancel = terminal::CancelOnDrop(cancelled.clone());
    tokio::task::spawn_blocking(move || {
        use std::io::Write;
        if ask {
            let mut stderr = std::io::stderr();
            let _ = write!(stderr, "> ");
            let _ = stderr.flush();
        }
        terminal::next_line(&cancelled)
    })
    .await
    .ok()
    .flatten()
}

/// The turns of conversation `session` in the journal, oldest first.
fn turns_of(runs: &[RunRecord], session: &str, path: &std::path::Path) -> Result<Vec<RunRecord>, CliError> {
    let mut turns: Vec<(u32, RunRecord)> =
        runs.iter().filter_map(|r| number(&r.run_id, session).map(|n| (n, r.clone()))).collect();
    if turns.is_empty() {
        return Err(CliError::Usage(format!(
            "no conversation {session:?} in {}; `harnessx runs list --durable {}` shows its turns (ID.1, ID.2, ...)",
            path.display(),
            shell_word(&path.display().to_string())
        )));
    }
    turns.sort_by_key(|(n, _)| *n);
    Ok(turns.into_iter().map(|(_, r)| r).collect())
}

/// The file of a line `/attach FILE` (surrounding blanks and quotes trimmed), if the line
/// is one.
fn attach_line(line: &str) -> Option<&str> {
    let rest = line.trim().strip_prefix("/attach")?;
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let path = rest.trim();
    let path = path.strip_prefix('"').and_then(|p| p.strip_suffix('"')).unwrap_or(path);
    let path = path.strip_prefix('\'').and_then(|p| p.strip_suffix('\'')).unwrap_or(path);
    Some(path)
}

/// The turn number of run `run_id` in conversation `session` (`SESSION.N`).
fn number(run_id: &str, session: &str) -> Option<u32> {
    run_id.strip_prefix(session)?.strip_prefix('.')?.parse().ok()
}

/// `$XDG_STATE_HOME/harnessx/chat.db`, else `~/.local/state/harnessx/chat.db`, its folder
/// created.
fn default_journal() -> Result<PathBuf, CliError> {
    let absolute = |name: &str| std::env::var_os(name).map(PathBuf::from).filter(|p| p.is_absolute());
    let dir = absolute("XDG_STATE_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".local").join("state")))
        .ok_or_else(|| CliError::Usage("no HOME to keep conversations under; pass --durable FILE".into()))?
        .join("harnessx");
    std::fs::create_dir_all(&dir)
        .map_err(|e| CliError::Usage(format!("{}: {e}; pass --durable FILE", dir.display())))?;
    Ok(dir.join("chat.db"))
}

/// The command that continues the conversation.
fn continue_command(session: &str, journal: Option<&std::path::Path>) -> String {
    let mut words = vec!["harnessx".to_owned(), "chat".into(), "--session".into(), shell_word(session)];
    if let Some(path) = journal {
        words.push("--durable".into());
        words.push(shell_word(&path.display().to_string()));
    }
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attach_lines_name_a_file() {
        assert_eq!(attach_line("/attach shot.png"), Some("shot.png"));
        assert_eq!(attach_line("  /attach   \"my shot.png\" "), Some("my shot.png"));
        assert_eq!(attach_line("/attach"), Some(""));
        assert_eq!(attach_line("/attachment x"), None);
        assert_eq!(attach_line("please /attach x"), None);
    }

    #[test]
    fn turn_numbers_belong_to_their_session_only() {
        assert_eq!(number("chat-1.3", "chat-1"), Some(3));
        assert_eq!(number("chat-12.3", "chat-1"), None);
        assert_eq!(number("chat-1", "chat-1"), None);
        assert_eq!(number("chat-1.x", "chat-1"), None);
    }
}
