//! [`AgentRuntime`]: runs an [`Agent`] with every step journaled before it is acted on.
//!
//! - `error`: [`DurableError`], and the errors every backend words the same way;
//! - `fingerprint`: what a run depends on, and the hash a decision is bound to;
//! - this file: the runtime's API (start, resume, status, approve, answer, conversations);
//! - `replay`: what a run's journal says, indexed for the loop;
//! - `fork`: a new run from another's journaled history up to a turn;
//! - `journal_steps`: the steps of a journaled run, the seam the one loop calls;
//! - `group_commit`: call results committed as they finish, several to a commit.

mod durable_runs;
mod error;
mod fingerprint;
mod fork;
mod group_commit;
mod journal_steps;
mod replay;

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use tracing::Instrument;

use harnessx_agent::model::{Message, Usage};
use harnessx_agent::output::{Output, OutputSpec};
use harnessx_agent::{
    Agent, AgentError, Events, NeedsInput, NeedsInputKind, Prompt, RunResult, RunState, Start, spans,
};
use harnessx_core::ApprovalDecision;

pub use error::DurableError;
use error::durable_error_type;
pub(crate) use error::not_awaited;
pub use fingerprint::arguments_hash;
pub(crate) use fingerprint::fingerprint;
pub use fork::ForkedFrom;
use journal_steps::JournalSteps;
use replay::{Replay, continues};

use crate::journal::{Entry, JournalEntry, JournalError, JournalStore, RunRecord, RunStatus};
use crate::memory::{MemoryJournal, now_ms};
use crate::runs::{ResumeOptions, StartOptions};
use crate::sqlite::SqliteJournal;

/// Where a run stands, as [`AgentRuntime::status`] reports it: the journal's header and
/// the run's [`RunState`] read from its journal (status, answer or error, usage, turns,
/// everything it waits for; the conversation itself comes from driving the run).
///
/// Serialises as `{"run": RunRecord, "turns", "calls", "needs_input", "usage"}`, the
/// shape `harnessx runs show --json` has always printed, with `"limit"` once the run
/// stopped at one, `"blocked"` (the hook and its message) once a hook ended it, and
/// `"forked_from"` (`{"run_id", "turn"}`) for a fork.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// The header.
    pub run: RunRecord,
    /// The run's state.
    pub state: RunState,
    /// Calls with a journaled result.
    pub calls: usize,
    /// The run this one was forked from ([`AgentRuntime::fork`]), if it is a fork.
    pub forked_from: Option<ForkedFrom>,
}

impl serde::Serialize for RunReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("run", &self.run)?;
        map.serialize_entry("turns", &self.state.turns)?;
        map.serialize_entry("calls", &self.calls)?;
        map.serialize_entry("needs_input", &self.state.needs_input)?;
        map.serialize_entry("usage", &self.state.usage)?;
        if let Some(limit) = self.state.limit {
            map.serialize_entry("limit", &limit)?;
        }
        if let Some(blocked) = &self.state.blocked {
            map.serialize_entry("blocked", blocked)?;
        }
        if let Some(origin) = &self.forked_from {
            map.serialize_entry("forked_from", origin)?;
        }
        map.end()
    }
}

/// Runs an [`Agent`] durably: the model's responses, each call's start, approval and
/// result, and the final answer are committed to a [`JournalStore`] before they are
/// acted on. After a crash, [`resume`](Self::resume) replays what was journaled and
/// never asks the model or runs a tool again for a step that completed; a call that
/// started and has no result is run again if its tool is `safe` or `idempotent` (with
/// the same idempotency key), and for `manual` the run stops with
/// [`NeedsInput`] instead. See `docs/durable.md`.
pub struct AgentRuntime {
    agent: Arc<Agent>,
    journal: Arc<dyn JournalStore>,
}

impl std::fmt::Debug for AgentRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRuntime").field("agent", &self.agent).finish_non_exhaustive()
    }
}

impl AgentRuntime {
    /// A runtime over any journal.
    pub fn new(agent: impl Into<Arc<Agent>>, journal: Arc<dyn JournalStore>) -> Self {
        Self { agent: agent.into(), journal }
    }

    /// A runtime journaling to the SQLite file at `path` (created if missing).
    pub fn sqlite(
        agent: impl Into<Arc<Agent>>,
        path: impl AsRef<std::path::Path>,
    ) -> Result<Self, DurableError> {
        Ok(Self::new(agent, Arc::new(SqliteJournal::open(path)?)))
    }

    /// A runtime journaling in memory (tests; nothing survives the process).
    pub fn in_memory(agent: impl Into<Arc<Agent>>) -> Self {
        Self::new(agent, Arc::new(MemoryJournal::new()))
    }

    /// The agent.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// The journal.
    pub fn journal(&self) -> &Arc<dyn JournalStore> {
        &self.journal
    }

    /// What the run depends on, as (digest text, summary).
    fn fingerprint(&self) -> (String, String) {
        fingerprint(&self.agent)
    }

    /// Starts a run. `run_id` must be new in the journal. The prompt is text (`&str`,
    /// `String`) or a [`Prompt`] with media attached: they are journaled with the run
    /// (a SQLite journal keeps each blob once, by SHA-256), so a resume sends the model
    /// the same bytes.
    pub async fn start(&self, run_id: &str, prompt: impl Into<Prompt>) -> Result<RunResult, DurableError> {
        self.start_inner(run_id, prompt.into(), None).await
    }

    /// Starts a typed run: its answer must fit `output` (see
    /// [`Agent::run_with_output`](harnessx_agent::Agent::run_with_output)), and the
    /// completed result's [`value`](RunResult::value) is it. The output is journaled
    /// first, so `resume` (in any process) checks the answers the same way and counts the
    /// attempts from the journaled responses; each attempt is a journaled step like any
    /// other. `events` as for [`start_with_events`](Self::start_with_events).
    pub async fn start_with_output(
        &self,
        run_id: &str,
        prompt: impl Into<Prompt>,
        output: Output,
        events: Option<Events>,
    ) -> Result<RunResult, DurableError> {
        let options = StartOptions { output: Some(output), ..StartOptions::default() };
        self.start_run(run_id, prompt.into(), None, options, events).await
    }

    /// Starts a run with what [`StartOptions`] says besides its prompt: a typed run's
    /// output, and the run's own limits and model price, which are journaled with it and
    /// hold on every resume, whichever agent resumes it (a resume changes them with
    /// [`resume_with`](Self::resume_with)). `events` as for
    /// [`start_with_events`](Self::start_with_events).
    pub async fn start_with(
        &self,
        run_id: &str,
        prompt: impl Into<Prompt>,
        options: StartOptions,
        events: Option<Events>,
    ) -> Result<RunResult, DurableError> {
        self.start_run(run_id, prompt.into(), None, options, events).await
    }

    /// Starts a run that must answer with a `T` ([`start_with_output`](Self::start_with_output)
    /// with `T`'s schema and decoding check); read it with [`RunResult::value_as`].
    pub async fn start_typed<T>(
        &self,
        run_id: &str,
        prompt: impl Into<Prompt>,
    ) -> Result<RunResult, DurableError>
    where
        T: harnessx_core::schemars::JsonSchema + serde::de::DeserializeOwned + 'static,
    {
        self.start_with_output(run_id, prompt, Output::of::<T>(), None).await
    }

    /// [`resume`](Self::resume) of a typed run with `output` (the same schema, mode and
    /// retries it was started with, else [`DurableError::Mismatch`]): answers are then
    /// also checked to decode into the Rust type of [`Output::of`], which a plain
    /// `resume` (the journaled schema alone) cannot do.
    pub async fn resume_with_output(
        &self,
        run_id: &str,
        output: Output,
        events: Option<Events>,
    ) -> Result<RunResult, DurableError> {
        self.drive(run_id, events, Some(output), None).await
    }

    /// [`start`](Self::start), sending the run's [`AgentEvent`](harnessx_agent::AgentEvent)s
    /// to `events` as they happen: the shapes and order of
    /// [`Agent::run_stream`](harnessx_agent::Agent::run_stream)'s, from the same loop.
    pub async fn start_with_events(
        &self,
        run_id: &str,
        prompt: impl Into<Prompt>,
        events: Events,
    ) -> Result<RunResult, DurableError> {
        self.start_inner(run_id, prompt.into(), Some(events)).await
    }

    /// [`resume`](Self::resume), sending the events of what runs now (a replayed step
    /// sends none) to `events`.
    pub async fn resume_with_events(&self, run_id: &str, events: Events) -> Result<RunResult, DurableError> {
        self.drive(run_id, Some(events), None, None).await
    }

    /// Starts run `run_id` as the next turn of a conversation: the model sees the
    /// messages of run `previous` (completed; it may itself continue an earlier one)
    /// followed by `prompt`. The link is journaled first, so a crash, a `resume` or a
    /// later [`transcript`](Self::transcript) rebuilds the same conversation from the
    /// journal alone, replaying the earlier turns without asking the model or running a
    /// tool. `events` as for [`start_with_events`](Self::start_with_events).
    pub async fn continue_conversation(
        &self,
        run_id: &str,
        previous: &str,
        prompt: impl Into<Prompt>,
        events: Option<Events>,
    ) -> Result<RunResult, DurableError> {
        let (run, _) = self.load(previous)?;
        if run.status != RunStatus::Completed {
            return Err(DurableError::Conversation(format!(
                "run {previous:?} is {}: a conversation goes on from a completed turn",
                run.status.as_str()
            )));
        }
        self.start_run(run_id, prompt.into(), Some(previous), StartOptions::default(), events).await
    }

    /// The messages of run `run_id` (completed) from the first turn of its conversation
    /// on: the prompts, the model's answers and calls, the calls' results. Rebuilt by
    /// replaying the journal (nothing is asked or run); the same conversation a
    /// [`continue_conversation`](Self::continue_conversation) after it goes on from.
    pub async fn transcript(&self, run_id: &str) -> Result<Vec<Message>, DurableError> {
        self.conversation_through(Some(run_id.to_owned())).await
    }

    async fn start_inner(
        &self,
        run_id: &str,
        prompt: Prompt,
        events: Option<Events>,
    ) -> Result<RunResult, DurableError> {
        self.start_run(run_id, prompt, None, StartOptions::default(), events).await
    }

    /// Creates run `run_id` on `prompt`, fingerprinted with this runtime's agent, once the
    /// checks that journal nothing when they fail hold (a tool choice that names no
    /// registered tool, an output schema that cannot be used); returns `output`'s spec.
    fn create_run(
        &self,
        run_id: &str,
        prompt: Prompt,
        output: Option<&Output>,
    ) -> Result<Option<OutputSpec>, DurableError> {
        self.agent.check_tool_choice()?;
        let spec = output.map(|o| o.spec(self.agent.config())).transpose().map_err(AgentError::from)?;
        let (fingerprint, fingerprint_summary) = self.fingerprint();
        let now = now_ms();
        self.journal.create_run(&RunRecord {
            run_id: run_id.to_owned(),
            prompt: prompt.text,
            prompt_parts: prompt.parts,
            fingerprint,
            fingerprint_summary,
            status: RunStatus::Running,
            created_at_ms: now,
            updated_at_ms: now,
            output: None,
        })?;
        Ok(spec)
    }

    async fn start_run(
        &self,
        run_id: &str,
        prompt: Prompt,
        previous: Option<&str>,
        options: StartOptions,
        events: Option<Events>,
    ) -> Result<RunResult, DurableError> {
        let StartOptions { output, limits, price, progress: _ } = options;
        let spec = self.create_run(run_id, prompt, output.as_ref())?;
        if let Some(previous) = previous {
            self.journal.append(run_id, &[Entry::Continues { run_id: previous.to_owned() }], None)?;
        }
        if let Some(spec) = spec {
            self.journal.append(run_id, &[Entry::Output { output: spec }], None)?;
        }
        if limits.is_some() || price.is_some() {
            let entry = Entry::Limits { limits: limits.unwrap_or_default(), price };
            self.journal.append(run_id, &[entry], None)?;
        }
        self.drive(run_id, events, output, None).await
    }

    /// The messages of the conversation that run `last` ends (none for `None`): each run
    /// of its chain replayed from the journal, oldest first.
    async fn conversation_through(&self, mut last: Option<String>) -> Result<Vec<Message>, DurableError> {
        let mut chain = Vec::new();
        let mut seen = HashSet::new();
        while let Some(run_id) = last {
            if !seen.insert(run_id.clone()) {
                return Err(DurableError::Conversation(format!(
                    "run {run_id:?} continues its own conversation: the journal is damaged"
                )));
            }
            let (run, entries) = self.load(&run_id)?;
            if run.status != RunStatus::Completed {
                return Err(DurableError::Conversation(format!(
                    "run {run_id:?} is {}: a conversation goes on from a completed turn",
                    run.status.as_str()
                )));
            }
            last = continues(&entries);
            chain.push((run, entries));
        }
        let mut history = Vec::new();
        for (run, entries) in chain.into_iter().rev() {
            let mut steps = JournalSteps::read_only(&run.run_id, self.journal.clone(), &entries);
            let permissions = self.agent.permissions().session();
            let output = journaled_output(&steps.replay)?;
            let start = start_of(&run, history, &steps.replay, output);
            let state = harnessx_agent::drive(&self.agent, &mut steps, start, &permissions, None).await?;
            if !state.is_completed() {
                return Err(DurableError::Conversation(format!(
                    "run {:?} does not replay to its answer with this agent",
                    run.run_id
                )));
            }
            history = state.messages;
        }
        Ok(history)
    }

    /// Continues a run from its journal: after a crash, after `approve`/`answer`, or
    /// after a failure.
    pub async fn resume(&self, run_id: &str) -> Result<RunResult, DurableError> {
        self.drive(run_id, None, None, None).await
    }

    /// [`resume`](Self::resume) with the changes `options` makes to the run's limits and
    /// price: journaled first (once the run is known to be resumable), they are the
    /// run's from then on, so a later plain `resume` keeps them. `events` as for
    /// [`resume_with_events`](Self::resume_with_events).
    pub async fn resume_with(
        &self,
        run_id: &str,
        options: ResumeOptions,
        events: Option<Events>,
    ) -> Result<RunResult, DurableError> {
        let changes =
            (!options.is_empty()).then_some(Entry::Limits { limits: options.limits, price: options.price });
        self.drive(run_id, events, None, changes).await
    }

    /// Where the run stands. The usage is rebuilt from the journal: every response's and
    /// compaction summary's (priced as the run prices them: by the model that answered,
    /// the agent's model at the run's own price, else this runtime's agent's), the
    /// specialists' usage recorded with their calls, and the calls with a result; a run stopped at a limit
    /// reports the usage it had there.
    pub fn status(&self, run_id: &str) -> Result<RunReport, DurableError> {
        let (run, entries) = self.load(run_id)?;
        let replay = Replay::new(&entries);
        // Each response and summary counted as the run counts it (`budget::priced`): under
        // the model that answered, at its price.
        let price = replay.price.or_else(|| self.agent.price());
        let model = self.agent.model().map(|m| m.name()).unwrap_or_default();
        let summarizer = match &self.agent.config().context.summarizer {
            harnessx_agent::Summarizer::Model(m) => Some(m.name()),
            harnessx_agent::Summarizer::Agent => None,
        };
        let mut usage = Usage::default();
        let responses = replay.responses.values().map(|r| (r, None));
        let summaries = replay.summaries.values().map(|r| (r, summarizer.as_deref()));
        for (response, by_default) in responses.chain(summaries) {
            let spent = response
                .get("usage")
                .and_then(|u| serde_json::from_value::<Usage>(u.clone()).ok())
                .unwrap_or_default();
            let by = response.get("model").and_then(Value::as_str).or(by_default);
            usage += harnessx_agent::budget::priced(spent, by, &model, price).1;
        }
        for spent in replay.usage.values() {
            usage += spent.values().copied().sum::<Usage>();
        }
        usage.tool_calls += replay.results.len() as u64;
        let limit = match (run.status, replay.limit) {
            (RunStatus::LimitReached, Some((limit, at))) => {
                usage = at;
                Some(limit)
            }
            _ => None,
        };
        let output = if run.status == RunStatus::Completed {
            run.output.clone().unwrap_or_default()
        } else {
            String::new()
        };
        // A typed run's answer is its output, as JSON.
        let value = match replay.output {
            Some(_) if run.status == RunStatus::Completed => serde_json::from_str(&output).ok(),
            _ => None,
        };
        let state = RunState {
            run_id: Some(run.run_id.clone()),
            status: run.status,
            output,
            value,
            usage,
            limit,
            turns: replay.responses.len() as u32,
            needs_input: if run.status == RunStatus::NeedsInput { replay.paused.clone() } else { Vec::new() },
            error: if run.status == RunStatus::Failed { run.output.clone() } else { None },
            blocked: if run.status == RunStatus::Blocked { replay.blocked.clone() } else { None },
            ..RunState::default()
        };
        Ok(RunReport { calls: replay.results.len(), forked_from: replay.forked.clone(), state, run })
    }

    /// Records a decision on an ASK call the run is waiting on. Then `resume` it (from
    /// this process or another).
    pub fn approve(
        &self,
        run_id: &str,
        call_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), DurableError> {
        let pending = self.awaited(run_id, call_id, NeedsInputKind::Approval)?;
        let arguments_hash = Some(arguments_hash(&pending.arguments));
        self.journal.append(
            run_id,
            &[Entry::Approval { call_id: call_id.to_owned(), tool: pending.tool, decision, arguments_hash }],
            None,
        )?;
        Ok(())
    }

    /// Answers whether a `manual` call whose outcome was unknown took effect (the text
    /// becomes the call's result for the model), or replies to a question the run put to
    /// a person. Then `resume` the run.
    ///
    /// For a server's question ([`NeedsInputKind::Elicitation`]), `text` is a JSON object
    /// fitting its schema, `decline` or `cancel`
    /// ([`NeedsInput::checked_answer`]); the call runs again on `resume` and the server
    /// gets the answer. A wrong one is [`DurableError::BadAnswer`], nothing recorded.
    pub fn answer(&self, run_id: &str, call_id: &str, text: &str) -> Result<(), DurableError> {
        let need = self.awaited(run_id, call_id, NeedsInputKind::Outcome)?;
        let text = need.checked_answer(text).map_err(DurableError::BadAnswer)?;
        self.journal.append(run_id, &[Entry::Answer { call_id: call_id.to_owned(), text }], None)?;
        Ok(())
    }

    fn awaited(&self, run_id: &str, call_id: &str, kind: NeedsInputKind) -> Result<NeedsInput, DurableError> {
        let (run, entries) = self.load(run_id)?;
        let state = Replay::new(&entries);
        let waiting: Vec<&NeedsInput> =
            if run.status == RunStatus::NeedsInput { state.paused.iter().collect() } else { Vec::new() };
        if let Some(n) =
            waiting.iter().find(|n| n.call_id == call_id && n.kind.takes_answer() == kind.takes_answer())
        {
            return Ok((*n).clone());
        }
        let waiting: Vec<NeedsInput> = waiting.into_iter().cloned().collect();
        Err(not_awaited(run_id, call_id, kind, &waiting, run.status))
    }

    fn load(&self, run_id: &str) -> Result<(RunRecord, Vec<JournalEntry>), DurableError> {
        Ok(self.journal.load_run(run_id)?.ok_or_else(|| JournalError::NoSuchRun(run_id.to_owned()))?)
    }

    async fn drive(
        &self,
        run_id: &str,
        events: Option<Events>,
        output: Option<Output>,
        changes: Option<Entry>,
    ) -> Result<RunResult, DurableError> {
        // One driver at a time: a second `resume` while this one runs would run the
        // same calls again.
        let _lock = self.journal.lock_run(run_id)?;
        let (run, entries) = self.load(run_id)?;
        if run.status == RunStatus::Completed {
            return Err(DurableError::Completed(run_id.to_owned()));
        }
        let (fingerprint, summary) = self.fingerprint();
        if fingerprint != run.fingerprint {
            return Err(DurableError::Mismatch {
                run_id: run_id.to_owned(),
                was: run.fingerprint_summary,
                now: summary,
            });
        }
        self.agent.check_tool_choice()?;
        // A resume's changes to the run's limits and price, journaled before they apply.
        let (run, entries) = match changes {
            Some(entry) => {
                self.journal.append(run_id, &[entry], None)?;
                self.load(run_id)?
            }
            None => (run, entries),
        };
        // The run's `invoke_agent` span, as for a direct run, with the run id; a resumed
        // run (one with a journal to replay) says so. (Its own limits are not a step.)
        let span = spans::invoke_agent(&self.agent);
        if !span.is_disabled() {
            span.record("harnessx.run_id", run_id);
            if entries.iter().any(|e| !matches!(e.entry, Entry::Limits { .. })) {
                span.record("harnessx.replayed", true);
            }
        }
        let outcome =
            self.drive_journaled(&run, &entries, events.as_ref(), output).instrument(span.clone()).await;
        match &outcome {
            Ok(result) => spans::record_result(&span, result),
            Err(DurableError::Agent(e)) => spans::record_error(&span, spans::agent_error_type(e), e),
            Err(e) => spans::record_error(&span, durable_error_type(e), e),
        }
        if let Err(DurableError::Agent(e)) = &outcome {
            // Best effort: the run stays resumable whatever happens here.
            let _ = self.journal.append(
                run_id,
                &[Entry::Failed { error: e.to_string() }],
                Some((RunStatus::Failed, Some(e.to_string()))),
            );
            self.agent.run_failed_hooks(Some(run_id), &e.to_string()).await;
        }
        outcome
    }

    async fn drive_journaled(
        &self,
        run: &RunRecord,
        entries: &[JournalEntry],
        events: Option<&Events>,
        output: Option<Output>,
    ) -> Result<RunResult, DurableError> {
        let replay = Replay::new(entries);
        // The journaled output, or the caller's when it is the same (with its decoding
        // check).
        let output = match (output, journaled_output(&replay)?) {
            (Some(given), Some(_)) => {
                let (now, was) = (given.spec(self.agent.config()), replay.output.clone());
                if now.as_ref().ok() != was.as_ref() {
                    return Err(DurableError::Mismatch {
                        run_id: run.run_id.clone(),
                        was: format!("the output {}", describe_output(was.as_ref())),
                        now: format!("the output {}", describe_output(now.ok().as_ref())),
                    });
                }
                Some(given)
            }
            (Some(_), None) => {
                return Err(DurableError::Mismatch {
                    run_id: run.run_id.clone(),
                    was: "no output schema".into(),
                    now: "an output schema".into(),
                });
            }
            (None, journaled) => journaled,
        };
        // The run's own manager: its session grants belong to the run, rebuilt by the
        // loop from the journaled decisions as it replays the calls they were made on.
        let permissions = self.agent.permissions().session();
        let history = self.conversation_through(replay.continues.clone()).await?;
        let mut steps = JournalSteps {
            run_id: run.run_id.clone(),
            journal: self.journal.clone(),
            replay,
            pending: Vec::new(),
            read_only: false,
        };
        let start = start_of(run, history, &steps.replay, output);
        harnessx_agent::drive(&self.agent, &mut steps, start, &permissions, events).await
    }
}

/// The output a run's journal says it must answer.
fn journaled_output(replay: &Replay) -> Result<Option<Output>, DurableError> {
    replay
        .output
        .as_ref()
        .map(|spec| Output::from_spec(spec).map_err(|e| DurableError::Agent(e.into())))
        .transpose()
}

/// An output as [`DurableError::Mismatch`] names it.
fn describe_output(spec: Option<&OutputSpec>) -> String {
    match spec {
        Some(spec) => format!("schema {} in mode {} with {} retries", spec.schema, spec.mode, spec.retries),
        None => "none".into(),
    }
}

/// How run `run` begins again after `history`: its prompt and the prompt's media (the same
/// bytes), its own limits and price where it has some (the agent's otherwise), `output`.
fn start_of(
    run: &RunRecord,
    history: Vec<Message>,
    replay: &replay::Replay,
    output: Option<Output>,
) -> Start {
    Start {
        history,
        prompt: run.prompt.clone(),
        parts: run.prompt_parts.clone(),
        limits: replay.limits.clone(),
        output,
        price: replay.price,
    }
}

#[cfg(test)]
mod tests {
    use harnessx_agent::Limit;
    use serde_json::json;

    use super::*;

    fn report(status: RunStatus, limit: Option<Limit>) -> RunReport {
        let run = RunRecord {
            run_id: "r1".into(),
            prompt: "p".into(),
            prompt_parts: Default::default(),
            fingerprint: "f".into(),
            fingerprint_summary: "s".into(),
            status,
            created_at_ms: 1,
            updated_at_ms: 2,
            output: None,
        };
        let state = RunState {
            status,
            turns: 3,
            limit,
            usage: Usage { requests: 3, tool_calls: 2, ..Usage::default() },
            ..RunState::default()
        };
        RunReport { run, state, calls: 2, forked_from: None }
    }

    #[test]
    fn a_report_serialises_as_runs_show_has_always_printed_it() {
        let value = serde_json::to_value(report(RunStatus::Completed, None)).unwrap();
        let keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["run", "turns", "calls", "needs_input", "usage"]);
        assert_eq!(
            (&value["run"]["run_id"], &value["turns"], &value["calls"]),
            (&json!("r1"), &json!(3), &json!(2))
        );
        assert_eq!(value["usage"]["tool_calls"], 2);
        assert_eq!(value["needs_input"], json!([]));
    }

    #[test]
    fn a_report_of_a_run_stopped_at_a_limit_names_it() {
        let value = serde_json::to_value(report(RunStatus::LimitReached, Some(Limit::ToolCalls))).unwrap();
        assert_eq!(value["limit"], "tool_calls");
        assert!(value.get("forked_from").is_none());
        let forked = RunReport {
            forked_from: Some(ForkedFrom { run_id: "r0".into(), turn: 2 }),
            ..report(RunStatus::Completed, None)
        };
        let value = serde_json::to_value(forked).unwrap();
        assert_eq!(value["forked_from"], json!({"run_id": "r0", "turn": 2}));
    }

    #[test]
    fn a_mismatched_output_is_described_by_its_schema_mode_and_retries() {
        assert_eq!(describe_output(None), "none");
        let spec: OutputSpec =
            serde_json::from_value(json!({"schema": {"type": "integer"}, "mode": "tool", "retries": 2}))
                .unwrap();
        assert_eq!(describe_output(Some(&spec)), r#"schema {"type":"integer"} in mode tool with 2 retries"#);
    }
}
