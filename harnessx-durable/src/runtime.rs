//! [`AgentRuntime`]: runs an [`Agent`] with every step journaled before it is acted on.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tracing::Instrument;

use harnessx_agent::budget::{Limit, RunLimits, UsageByModel, UsageSink};
use harnessx_agent::model::{Message, ModelError, ModelRequest, ModelResponse, Usage};
use harnessx_agent::output::{Output, OutputSpec};
use harnessx_agent::run::recovery;
use harnessx_agent::{
    Agent, AgentError, Events, Executed, NeedsInput, NeedsInputKind, Recorded, Recovery, RunResult, RunState,
    Start, Steps, Unknown, spans,
};
use harnessx_core::{
    ApprovalDecision, ApprovalRequest, PlannedBatch, ReplayPolicy, RunContext, RunHooks, ToolCall, ToolResult,
};

use crate::journal::{Entry, JournalEntry, JournalError, JournalStore, RunRecord, RunStatus};
use crate::memory::{MemoryJournal, now_ms};
use crate::sqlite::SqliteJournal;

/// Why a durable operation failed. One line each.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DurableError {
    /// The journal could not be read or written; nothing after the last commit happened.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The model or the agent failed; the run is marked failed and can be resumed.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The run was started by an agent with other tools, model or system prompt.
    #[error(
        "run {run_id:?} was started with {was}; this agent has {now}. Resume it with the same tools, model and system prompt, or start a new run"
    )]
    Mismatch {
        /// The run.
        run_id: String,
        /// What the run was started with.
        was: String,
        /// What this agent has.
        now: String,
    },
    /// `approve` or `answer` for a call the run is not waiting on.
    #[error("run {run_id:?} is not waiting for {what} of call {call_id:?}{waiting}")]
    NotAwaited {
        /// The run.
        run_id: String,
        /// The call.
        call_id: String,
        /// `"an approval"` or `"an answer"`.
        what: &'static str,
        /// What it is waiting for instead, as a clause.
        waiting: String,
    },
    /// `resume` of a run that already finished.
    #[error("run {0:?} is already completed; `runs show` prints its answer")]
    Completed(String),
    /// The Restate cluster could not be reached, or answered with an error (feature
    /// `restate`): the run is as the cluster last recorded it.
    #[error("{0}")]
    Cluster(String),
    /// A conversation cannot go on from this run: it is not completed, or its chain of
    /// earlier turns is broken.
    #[error("{0}")]
    Conversation(String),
}

/// Where a run stands, as [`AgentRuntime::status`] reports it: the journal's header and
/// the run's [`RunState`] read from its journal (status, answer or error, usage, turns,
/// everything it waits for; the conversation itself comes from driving the run).
///
/// Serialises as `{"run": RunRecord, "turns", "calls", "needs_input", "usage"}`, the
/// shape `harnessx runs show --json` has always printed, with `"limit"` once the run
/// stopped at one.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// The header.
    pub run: RunRecord,
    /// The run's state.
    pub state: RunState,
    /// Calls with a journaled result.
    pub calls: usize,
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

/// What a run depends on, as (the text compared on resume, a summary for the error):
/// the tools' schemas, the model's name and the system prompt; and the tool choice
/// settings when they are not the defaults (so that the fingerprints of runs that never
/// set them are the same as before those settings existed).
pub(crate) fn fingerprint(agent: &Agent) -> (String, String) {
    let tools = agent.tools().get_tool_params();
    let model = agent.model().map(|m| m.name().to_owned()).unwrap_or_default();
    let system = agent.effective_system_prompt().unwrap_or_default();
    let mut full = serde_json::json!({"model": model, "system": system, "tools": tools});
    let names: Vec<String> = agent.tools().list_tools().into_iter().map(|d| d.name.to_string()).collect();
    let mut summary = format!(
        "tools [{}], model {:?}, a system prompt of {} characters",
        names.join(", "),
        model,
        system.chars().count()
    );
    let config = agent.config();
    if !config.tool_choice.is_auto() || config.parallel_tool_calls.is_some() || !config.reset_tool_choice {
        full["tool_choice"] = serde_json::json!({
            "choice": config.tool_choice,
            "parallel_tool_calls": config.parallel_tool_calls,
            "reset": config.reset_tool_choice,
        });
        summary.push_str(&format!(", tool choice {}", config.tool_choice));
        if let Some(parallel) = config.parallel_tool_calls {
            summary.push_str(&format!(" (parallel tool calls {parallel})"));
        }
        if !config.reset_tool_choice {
            summary.push_str(" without reset");
        }
    }
    // The context settings decide when the history is compacted: a resume with others
    // would not replay the run's requests (and on Restate, not its journal).
    let context = &config.context;
    let defaults = harnessx_agent::ContextPolicy::default();
    let cap = agent.tools().policy().max_result_chars;
    if context.window.is_some()
        || context.compact_at != defaults.compact_at
        || context.keep_turns != defaults.keep_turns
        || cap != harnessx_core::DEFAULT_MAX_RESULT_CHARS
    {
        full["context"] = serde_json::json!({
            "window": context.window,
            "compact_at": context.compact_at,
            "keep_turns": context.keep_turns,
            "max_result_chars": cap,
        });
        let window = context.window.map_or_else(|| "the model's".to_owned(), |w| w.to_string());
        summary.push_str(&format!(", context window {window}, result cap {cap}"));
    }
    (full.to_string(), summary)
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

    /// Starts a run. `run_id` must be new in the journal.
    pub async fn start(&self, run_id: &str, prompt: &str) -> Result<RunResult, DurableError> {
        self.start_inner(run_id, prompt, None).await
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
        prompt: &str,
        output: Output,
        events: Option<Events>,
    ) -> Result<RunResult, DurableError> {
        self.start_run(run_id, prompt, None, Some(output), events).await
    }

    /// Starts a run that must answer with a `T` ([`start_with_output`](Self::start_with_output)
    /// with `T`'s schema and decoding check); read it with [`RunResult::value_as`].
    pub async fn start_typed<T>(&self, run_id: &str, prompt: &str) -> Result<RunResult, DurableError>
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
        self.drive(run_id, events, Some(output)).await
    }

    /// [`start`](Self::start), sending the run's [`AgentEvent`](harnessx_agent::AgentEvent)s
    /// to `events` as they happen: the shapes and order of
    /// [`Agent::run_stream`](harnessx_agent::Agent::run_stream)'s, from the same loop.
    pub async fn start_with_events(
        &self,
        run_id: &str,
        prompt: &str,
        events: Events,
    ) -> Result<RunResult, DurableError> {
        self.start_inner(run_id, prompt, Some(events)).await
    }

    /// [`resume`](Self::resume), sending the events of what runs now (a replayed step
    /// sends none) to `events`.
    pub async fn resume_with_events(&self, run_id: &str, events: Events) -> Result<RunResult, DurableError> {
        self.drive(run_id, Some(events), None).await
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
        prompt: &str,
        events: Option<Events>,
    ) -> Result<RunResult, DurableError> {
        let (run, _) = self.load(previous)?;
        if run.status != RunStatus::Completed {
            return Err(DurableError::Conversation(format!(
                "run {previous:?} is {}: a conversation goes on from a completed turn",
                run.status.as_str()
            )));
        }
        self.start_run(run_id, prompt, Some(previous), None, events).await
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
        prompt: &str,
        events: Option<Events>,
    ) -> Result<RunResult, DurableError> {
        self.start_run(run_id, prompt, None, None, events).await
    }

    async fn start_run(
        &self,
        run_id: &str,
        prompt: &str,
        previous: Option<&str>,
        output: Option<Output>,
        events: Option<Events>,
    ) -> Result<RunResult, DurableError> {
        // A tool choice that names no registered tool journals nothing.
        self.agent.check_tool_choice()?;
        // Nor does an output schema that cannot be used.
        let spec =
            output.as_ref().map(|o| o.spec(self.agent.config())).transpose().map_err(AgentError::from)?;
        let (fingerprint, fingerprint_summary) = self.fingerprint();
        let now = now_ms();
        self.journal.create_run(&RunRecord {
            run_id: run_id.to_owned(),
            prompt: prompt.to_owned(),
            fingerprint,
            fingerprint_summary,
            status: RunStatus::Running,
            created_at_ms: now,
            updated_at_ms: now,
            output: None,
        })?;
        if let Some(previous) = previous {
            self.journal.append(run_id, &[Entry::Continues { run_id: previous.to_owned() }], None)?;
        }
        if let Some(spec) = spec {
            self.journal.append(run_id, &[Entry::Output { output: spec }], None)?;
        }
        self.drive(run_id, events, output).await
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
            let start = Start { history, prompt: run.prompt.clone(), limits: None, output, price: None };
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
        self.drive(run_id, None, None).await
    }

    /// Where the run stands. The usage is rebuilt from the journal: every response's and
    /// compaction summary's (priced as the run prices them: by the model that answered,
    /// the agent's model at this runtime's agent's price), the specialists' usage
    /// recorded with their calls, and the calls with a result; a run stopped at a limit
    /// reports the usage it had there.
    pub fn status(&self, run_id: &str) -> Result<RunReport, DurableError> {
        let (run, entries) = self.load(run_id)?;
        let replay = Replay::new(&entries);
        // Each response and summary counted as the run counts it (`budget::priced`): under
        // the model that answered, at its price.
        let price = self.agent.price();
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
            ..RunState::default()
        };
        Ok(RunReport { calls: replay.results.len(), state, run })
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

    /// Answers whether a `manual` call whose outcome was unknown took effect; the text
    /// becomes the call's result for the model. Then `resume` the run.
    pub fn answer(&self, run_id: &str, call_id: &str, text: &str) -> Result<(), DurableError> {
        self.awaited(run_id, call_id, NeedsInputKind::Outcome)?;
        self.journal.append(
            run_id,
            &[Entry::Answer { call_id: call_id.to_owned(), text: text.to_owned() }],
            None,
        )?;
        Ok(())
    }

    fn awaited(&self, run_id: &str, call_id: &str, kind: NeedsInputKind) -> Result<NeedsInput, DurableError> {
        let (run, entries) = self.load(run_id)?;
        let state = Replay::new(&entries);
        let waiting: Vec<&NeedsInput> =
            if run.status == RunStatus::NeedsInput { state.paused.iter().collect() } else { Vec::new() };
        if let Some(n) = waiting.iter().find(|n| n.call_id == call_id && n.kind == kind) {
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
        // The run's `invoke_agent` span, as for a direct run, with the run id; a resumed
        // run (one with a journal to replay) says so.
        let span = spans::invoke_agent(&self.agent);
        if !span.is_disabled() {
            span.record("harnessx.run_id", run_id);
            if !entries.is_empty() {
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
        // The run's own manager: its session grants belong to the run, rebuilt from the
        // journaled decisions.
        let permissions = self.agent.permissions().session();
        for tool in &replay.session_grants {
            permissions.grant_session(tool.clone());
        }
        let history = self.conversation_through(replay.continues.clone()).await?;
        let mut steps = JournalSteps {
            run_id: run.run_id.clone(),
            journal: self.journal.clone(),
            replay,
            pending: Vec::new(),
            read_only: false,
        };
        let start = Start { history, prompt: run.prompt.clone(), limits: None, output, price: None };
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

/// The `error.type` of a durable run that failed outside the agent.
fn durable_error_type(error: &DurableError) -> &'static str {
    match error {
        DurableError::Journal(_) => "journal",
        DurableError::Mismatch { .. } => "mismatch",
        DurableError::NotAwaited { .. } => "not_awaited",
        DurableError::Completed(_) => "completed",
        DurableError::Cluster(_) => "cluster",
        DurableError::Conversation(_) => "conversation",
        DurableError::Agent(e) => spans::agent_error_type(e),
    }
}

/// The hash a journaled decision is bound to: SHA-256 of the call's arguments as the
/// model sent them, in hex.
pub fn arguments_hash(arguments: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(arguments.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The error for `approve`/`answer` of a call the run is not waiting on, the same on
/// every backend: what it waits for instead, or where it stands.
pub(crate) fn not_awaited(
    run_id: &str,
    call_id: &str,
    kind: NeedsInputKind,
    waiting: &[NeedsInput],
    status: RunStatus,
) -> DurableError {
    let what = match kind {
        NeedsInputKind::Approval => "an approval",
        NeedsInputKind::Outcome => "an answer",
    };
    let waiting = if waiting.is_empty() {
        format!(" (it is {})", status.as_str())
    } else {
        let list: Vec<String> =
            waiting.iter().map(|n| format!("{} of {:?}", n.kind.noun(), n.call_id)).collect();
        format!("; it waits for: {}", list.join(", "))
    };
    DurableError::NotAwaited { run_id: run_id.to_owned(), call_id: call_id.to_owned(), what, waiting }
}

/// What a run's journal says, indexed for the loop.
#[derive(Default)]
struct Replay {
    responses: HashMap<u32, Value>,
    /// Context-length refusals by turn, each replayed once.
    overflows: HashMap<u32, ModelError>,
    /// Compaction summaries by (turn, attempt).
    summaries: HashMap<(u32, u32), Value>,
    started: HashSet<String>,
    results: HashMap<String, ToolResult>,
    /// Decisions by call id, with the hash of the arguments they were made on.
    decisions: HashMap<String, (Option<String>, ApprovalDecision)>,
    session_grants: Vec<String>,
    answers: HashMap<String, String>,
    paused: Vec<NeedsInput>,
    /// The run whose conversation this one continues.
    continues: Option<String>,
    /// What specialists used, by call id.
    usage: HashMap<String, UsageByModel>,
    /// The last limit the run stopped at, with the usage it had there.
    limit: Option<(Limit, Usage)>,
    /// What a typed run must answer.
    output: Option<OutputSpec>,
}

/// The run a run's journal says it continues.
fn continues(entries: &[JournalEntry]) -> Option<String> {
    entries.iter().find_map(|e| match &e.entry {
        Entry::Continues { run_id } => Some(run_id.clone()),
        _ => None,
    })
}

impl Replay {
    fn new(entries: &[JournalEntry]) -> Self {
        let mut s = Self::default();
        for e in entries {
            match &e.entry {
                Entry::ModelResponse { turn, response } => {
                    s.responses.insert(*turn, response.clone());
                }
                Entry::CallStart { call_id, .. } => {
                    s.started.insert(call_id.clone());
                }
                Entry::CallResult { result, usage, .. } => {
                    s.results.insert(result.call_id.clone(), result.clone());
                    if !usage.is_empty() {
                        s.usage.insert(result.call_id.clone(), usage.clone());
                    }
                }
                Entry::Approval { call_id, tool, decision, arguments_hash } => {
                    s.decisions.insert(call_id.clone(), (arguments_hash.clone(), decision.clone()));
                    if decision.grants_session() && arguments_hash.is_some() {
                        s.session_grants.push(tool.clone());
                    }
                }
                Entry::Answer { call_id, text } => {
                    s.answers.insert(call_id.clone(), text.clone());
                }
                Entry::Paused { needs_input } => {
                    s.paused = serde_json::from_value(needs_input.clone()).unwrap_or_default();
                }
                Entry::Continues { run_id } => s.continues = Some(run_id.clone()),
                Entry::ContextOverflow { turn, message, limit, requested } => {
                    let error = ModelError::ContextWindow {
                        message: message.clone(),
                        limit: *limit,
                        requested: *requested,
                    };
                    s.overflows.insert(*turn, error);
                }
                Entry::Compaction { turn, attempt, response } => {
                    s.summaries.insert((*turn, *attempt), response.clone());
                }
                Entry::LimitReached { limit, usage } => s.limit = Some((*limit, *usage)),
                Entry::Output { output } => s.output = Some(output.clone()),
                Entry::Final { .. } | Entry::Failed { .. } => {}
            }
        }
        s
    }
}

/// The steps of a run journaled in a [`JournalStore`]: every response committed as it
/// arrives, every decision before its call runs, every start before its handler.
struct JournalSteps {
    run_id: String,
    journal: Arc<dyn JournalStore>,
    replay: Replay,
    /// Entries that go with the next commit (results the loop settled).
    pending: Vec<Entry>,
    /// Replaying a completed run for its messages: everything must come from the
    /// journal; nothing is written, asked or run.
    read_only: bool,
}

impl JournalSteps {
    fn read_only(run_id: &str, journal: Arc<dyn JournalStore>, entries: &[JournalEntry]) -> Self {
        Self {
            run_id: run_id.to_owned(),
            journal,
            replay: Replay::new(entries),
            pending: Vec::new(),
            read_only: true,
        }
    }

    /// The error of a replay that would have to do something live.
    fn not_journaled(&self, what: &str) -> DurableError {
        DurableError::Conversation(format!(
            "run {:?} does not replay from its journal ({what} is not journaled)",
            self.run_id
        ))
    }

    fn commit(
        &mut self,
        mut entries: Vec<Entry>,
        status: Option<(RunStatus, Option<String>)>,
    ) -> Result<(), DurableError> {
        if self.read_only {
            self.pending.clear();
            return Ok(());
        }
        let mut all = std::mem::take(&mut self.pending);
        all.append(&mut entries);
        if all.is_empty() && status.is_none() {
            return Ok(());
        }
        self.journal.append(&self.run_id, &all, status)?;
        Ok(())
    }
}

impl Steps for JournalSteps {
    type Error = DurableError;

    fn run_id(&self) -> Option<&str> {
        Some(&self.run_id)
    }

    async fn response(
        &mut self,
        agent: &Agent,
        turn: u32,
        request: &ModelRequest,
        events: Option<&Events>,
    ) -> Result<ModelResponse, DurableError> {
        // A journaled refusal of this turn's first request comes first: the loop then
        // compacts as it did, and asks again (the recorded response below).
        if let Some(refusal) = self.replay.overflows.remove(&turn) {
            return Err(AgentError::Model(refusal).into());
        }
        if let Some(recorded) = self.replay.responses.get(&turn) {
            let response: ModelResponse = serde_json::from_value(recorded.clone()).map_err(|e| {
                JournalError::Storage(format!(
                    "run {:?}: the model response of turn {turn} cannot be read: {e}",
                    self.run_id
                ))
            })?;
            if let Some(model) = agent.model() {
                spans::replayed_chat(&**model, request, turn, &response);
            }
            return Ok(response);
        }
        if self.read_only {
            return Err(self.not_journaled(&format!("the model response of turn {turn}")));
        }
        let response = match agent.request_turn(request, events, turn).await {
            Err(AgentError::Model(ModelError::ContextWindow { message, limit, requested })) => {
                // Journaled, so a resume compacts as this run is about to.
                let entry = Entry::ContextOverflow { turn, message: message.clone(), limit, requested };
                self.commit(vec![entry], None)?;
                return Err(AgentError::Model(ModelError::ContextWindow { message, limit, requested }).into());
            }
            other => other?,
        };
        // Committed as it arrives, before anything is asked or run: a crash after this
        // never asks the model for this turn again.
        let entry = Entry::ModelResponse {
            turn,
            response: serde_json::to_value(&response).expect("a response serialises"),
        };
        self.commit(vec![entry], Some((RunStatus::Running, None)))?;
        Ok(response)
    }

    async fn summary(
        &mut self,
        agent: &Agent,
        turn: u32,
        attempt: u32,
        request: &ModelRequest,
    ) -> Result<ModelResponse, DurableError> {
        if let Some(recorded) = self.replay.summaries.get(&(turn, attempt)) {
            return serde_json::from_value(recorded.clone()).map_err(|e| {
                JournalError::Storage(format!(
                    "run {:?}: the compaction summary of turn {turn} cannot be read: {e}",
                    self.run_id
                ))
                .into()
            });
        }
        if self.read_only {
            return Err(self.not_journaled(&format!("the compaction summary of turn {turn}")));
        }
        let response = agent.summarize(request, turn).await?;
        let entry = Entry::Compaction {
            turn,
            attempt,
            response: serde_json::to_value(&response).expect("a response serialises"),
        };
        self.commit(vec![entry], None)?;
        Ok(response)
    }

    fn context_overflow(&self, error: &DurableError) -> Option<ModelError> {
        match error {
            DurableError::Agent(AgentError::Model(e @ ModelError::ContextWindow { .. })) => Some(e.clone()),
            _ => None,
        }
    }

    fn recorded(&self, call_id: &str) -> Recorded<'_> {
        if let Some(result) = self.replay.results.get(call_id) {
            Recorded::Result(result)
        } else if let Some(text) = self.replay.answers.get(call_id) {
            Recorded::Answer(text)
        } else if self.replay.started.contains(call_id) {
            Recorded::Started
        } else {
            Recorded::Nothing
        }
    }

    fn recorded_usage(&self, call_id: &str) -> Option<&UsageByModel> {
        self.replay.usage.get(call_id)
    }

    fn recorded_decision(&self, call_id: &str, arguments: &str) -> Option<ApprovalDecision> {
        let (hash, decision) = self.replay.decisions.get(call_id)?;
        (hash.as_deref() == Some(arguments_hash(arguments).as_str())).then(|| decision.clone())
    }

    async fn decide(
        &mut self,
        permissions: &harnessx_core::PermissionManager,
        request: ApprovalRequest,
        arguments: &str,
    ) -> Result<Option<ApprovalDecision>, DurableError> {
        if self.read_only {
            return Err(self.not_journaled(&format!("a decision on call {:?}", request.call_id)));
        }
        let Some(decision) = permissions.decision(&request).await else { return Ok(None) };
        let entry = Entry::Approval {
            call_id: request.call_id.clone(),
            tool: request.tool_name.clone(),
            decision: decision.clone(),
            arguments_hash: Some(arguments_hash(arguments)),
        };
        self.commit(vec![entry], None)?;
        self.replay.decisions.insert(request.call_id, (Some(arguments_hash(arguments)), decision.clone()));
        Ok(Some(decision))
    }

    fn record(&mut self, turn: u32, result: &ToolResult) {
        self.pending.push(Entry::CallResult {
            turn,
            result: result.clone(),
            timed_out: false,
            usage: UsageByModel::new(),
        });
    }

    async fn execute(
        &mut self,
        agent: &Agent,
        turn: u32,
        batch: PlannedBatch,
        ctx: &RunContext,
    ) -> Result<Vec<Executed>, DurableError> {
        let calls: Vec<ToolCall> = (0..batch.len()).map(|i| batch.call(i).clone()).collect();
        if self.read_only
            && let Some(i) = (0..calls.len()).find(|&i| batch.result(i).is_none())
        {
            return Err(self.not_journaled(&format!("the result of call {:?}", calls[i].id)));
        }
        let mut starts: Vec<Entry> = Vec::new();
        // Starts of serial calls queued behind another: committed when their turn comes.
        let mut deferred_starts: HashMap<usize, Entry> = HashMap::new();
        let mut policies: HashMap<usize, ReplayPolicy> = HashMap::new();
        let mut serial_seen = false;
        for (index, call) in calls.iter().enumerate() {
            let (Some(tool), Some(policy)) = (batch.tool(index), batch.replay_policy(index)) else {
                continue;
            };
            let tool = tool.to_owned();
            policies.insert(index, policy);
            let key = harnessx_agent::run::recovery::idempotency_key(&self.run_id, &call.id);
            // (The loop gave the call this key.) Concurrent calls start together, and so does the first serial one: their
            // starts go in the batch commit. A serial call queued behind another commits
            // its start when its turn comes, so a crash before then does not leave it
            // looking started.
            let queued = !batch.is_concurrent(index) && std::mem::replace(&mut serial_seen, true);
            let start = Entry::CallStart {
                turn,
                call_id: call.id.clone(),
                tool,
                replay: policy.as_str().to_owned(),
                idempotency_key: key,
            };
            if queued {
                deferred_starts.insert(index, start);
            } else {
                starts.push(start);
            }
        }
        // The settled results and the starts of the batch: one commit.
        self.commit(starts, Some((RunStatus::Running, None)))?;
        let writer = GroupCommit::new(self.journal.clone(), self.run_id.clone());
        let unknown: Arc<Mutex<Vec<usize>>> = Arc::default();
        // What specialists report, journaled with their calls' results.
        let spent = UsageSink::new();
        let hooks = {
            let spent = spent.clone();
            let sink = writer.clone();
            let journal = self.journal.clone();
            let run = self.run_id.clone();
            let unknown = unknown.clone();
            let settled: HashSet<usize> = (0..calls.len()).filter(|&i| batch.result(i).is_some()).collect();
            let calls = calls.clone();
            RunHooks::new()
                .retry_timeouts(recovery::retry_timeouts(true))
                .on_start(move |i| {
                    // A call whose start was not in the batch commit: commit it now,
                    // before its handler runs.
                    if let Some(entry) = deferred_starts.get(&i)
                        && let Err(e) = journal.append(&run, std::slice::from_ref(entry), None)
                    {
                        tracing::error!(run = %run, error = %e, "journaling a call start failed");
                    }
                })
                .on_end(move |i, outcome| {
                    if settled.contains(&i) {
                        return;
                    }
                    if outcome.timed_out
                        && let Some(&policy) = policies.get(&i)
                        && let Recovery::Ask(_) = recovery::recover(
                            policy,
                            Unknown::TimedOut,
                            &calls[i].id,
                            &outcome.result.name,
                            &calls[i].arguments,
                        )
                    {
                        unknown.lock().unwrap_or_else(|e| e.into_inner()).push(i);
                        return;
                    }
                    sink.push(Entry::CallResult {
                        turn,
                        result: outcome.result.clone(),
                        timed_out: outcome.timed_out,
                        usage: spent.get(&outcome.result.call_id),
                    });
                })
        };
        let outcomes = spent.scope(agent.tools().run_planned(batch, ctx, &hooks)).await;
        drop(hooks);
        writer.flush().await?;
        let unknown = std::mem::take(&mut *unknown.lock().unwrap_or_else(|e| e.into_inner()));
        Ok(outcomes
            .into_iter()
            .enumerate()
            .map(|(i, o)| {
                let usage = spent.take(&o.result.call_id);
                Executed {
                    result: o.result,
                    unknown: unknown.contains(&i).then_some(Unknown::TimedOut),
                    usage,
                }
            })
            .collect())
    }

    async fn pause(&mut self, _turn: u32, needs: &[NeedsInput]) -> Result<bool, DurableError> {
        if self.read_only {
            return Err(self.not_journaled("an answer it waited for"));
        }
        let entry = Entry::Paused { needs_input: serde_json::to_value(needs).expect("serialises") };
        self.commit(vec![entry], Some((RunStatus::NeedsInput, None)))?;
        Ok(false)
    }

    async fn limit_reached(
        &mut self,
        _turn: u32,
        limit: Limit,
        _limits: &RunLimits,
        usage: &Usage,
    ) -> Result<Option<RunLimits>, DurableError> {
        // Stops here; `resume` under a higher limit goes on from the journal.
        let entry = Entry::LimitReached { limit, usage: *usage };
        self.commit(vec![entry], Some((RunStatus::LimitReached, None)))?;
        Ok(None)
    }

    async fn finish(&mut self, output: &str) -> Result<(), DurableError> {
        let entry = Entry::Final { output: output.to_owned() };
        self.commit(vec![entry], Some((RunStatus::Completed, Some(output.to_owned()))))
    }
}

/// Commits call results as they finish, off the async threads: whatever finished while
/// the previous commit was being written goes into the next one (group commit).
struct GroupCommit {
    journal: Arc<dyn JournalStore>,
    run_id: String,
    state: Mutex<Pending>,
    idle: tokio::sync::Notify,
}

#[derive(Default)]
struct Pending {
    queue: Vec<Entry>,
    busy: bool,
    error: Option<JournalError>,
}

impl GroupCommit {
    fn new(journal: Arc<dyn JournalStore>, run_id: String) -> Arc<Self> {
        Arc::new(Self { journal, run_id, state: Mutex::default(), idle: tokio::sync::Notify::new() })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues an entry; starts a committer when none is running.
    fn push(self: &Arc<Self>, entry: Entry) {
        let start = {
            let mut state = self.lock();
            state.queue.push(entry);
            !std::mem::replace(&mut state.busy, true)
        };
        if start {
            let me = self.clone();
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => drop(handle.spawn_blocking(move || me.drain())),
                Err(_) => me.drain(),
            }
        }
    }

    fn drain(&self) {
        loop {
            let entries = {
                let mut state = self.lock();
                if state.queue.is_empty() {
                    state.busy = false;
                    drop(state);
                    self.idle.notify_waiters();
                    return;
                }
                std::mem::take(&mut state.queue)
            };
            if let Err(e) = self.journal.append(&self.run_id, &entries, None) {
                self.lock().error.get_or_insert(e);
            }
        }
    }

    /// Waits until everything queued is committed.
    async fn flush(&self) -> Result<(), JournalError> {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut state = self.lock();
                if !state.busy && state.queue.is_empty() {
                    return state.error.take().map_or(Ok(()), Err);
                }
            }
            notified.await;
        }
    }
}
