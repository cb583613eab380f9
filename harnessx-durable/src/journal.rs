//! The journal: what a durable run records, step by step, and the store it is kept in.
//!
//! A run is a header ([`RunRecord`]) and an ordered list of [`Entry`]s. Every entry is
//! committed before the runtime acts on it: the model's response before its tool calls
//! start, a call's start before its handler runs, its result before the next model
//! request sees it. On resume the runtime reads the entries back and replays them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use harnessx_agent::budget::{Limit, ModelPrice, RunLimits, UsageByModel};
use harnessx_agent::model::Usage;
use harnessx_core::{ApprovalDecision, Parts, ToolResult};

/// Where a run stands (one type for every backend: the agent crate's).
pub use harnessx_agent::RunStatus;

/// The header of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The run's id, chosen by the caller (unique in the store).
    pub run_id: String,
    /// The prompt the run started with.
    pub prompt: String,
    /// The media attached to the prompt (none for a prompt of text alone), sent with it in
    /// the first user message, the same bytes on every resume. A SQLite journal keeps
    /// their bytes once each in its blobs table; [`JournalStore::list_runs`] leaves them
    /// out (a listing does not read every run's media), [`JournalStore::load_run`] has
    /// them.
    #[serde(default, skip_serializing_if = "Parts::is_empty")]
    pub prompt_parts: Parts,
    /// A digest of what the run depends on: the system prompt, the model's name and the
    /// tool definitions (names, schemas, policies). A resume with a different
    /// fingerprint is refused.
    pub fingerprint: String,
    /// A readable list of what went into the fingerprint, for the error that refuses a
    /// resume (`"tools: a, b; model: m"`).
    pub fingerprint_summary: String,
    /// Where the run stands.
    pub status: RunStatus,
    /// Milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// Milliseconds since the Unix epoch of the last change.
    pub updated_at_ms: u64,
    /// The final answer, once completed; the error text, once failed; the hook's
    /// message, once blocked.
    pub output: Option<String>,
}

/// One step of a run, as journaled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// The model answered turn `turn` (1-based). `response` is the
    /// `harnessx_agent::model::ModelResponse`, as JSON.
    ModelResponse {
        /// The turn.
        turn: u32,
        /// The response.
        response: Value,
    },
    /// The provider refused the request of turn `turn` as larger than the model's
    /// context window: the run compacted its history and asked again. A resume replays
    /// the refusal, so it compacts the same way.
    ContextOverflow {
        /// The turn.
        turn: u32,
        /// The provider's message.
        message: String,
        /// The window it named, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u64>,
        /// The size it measured, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        requested: Option<u64>,
    },
    /// The summary of a compaction of the history before the request of `turn`
    /// (`attempt` 0 when the estimate called for it, 1 after a context-length
    /// refusal): a resume puts the same summary in place, never asks for a new one.
    Compaction {
        /// The turn.
        turn: u32,
        /// 0 or 1.
        attempt: u32,
        /// The summarising model's response (a `ModelResponse`, as JSON).
        response: Value,
    },
    /// A call's handler is about to run (or was refused before it could, in which
    /// case a [`Entry::CallResult`] follows in the same commit).
    CallStart {
        /// The turn whose response made the call.
        turn: u32,
        /// The call id (after the runtime gave id-less calls one).
        call_id: String,
        /// The registered tool name it resolved to.
        tool: String,
        /// `"safe"`, `"idempotent"` or `"manual"`.
        replay: String,
        /// The key the handler sees in its context; the same on every re-run.
        idempotency_key: String,
    },
    /// A call's result.
    CallResult {
        /// The turn.
        turn: u32,
        /// The result as the model will see it.
        result: ToolResult,
        /// Whether the call timed out.
        timed_out: bool,
        /// What a specialist the call ran used, by model (absent for other tools): added
        /// to the run's usage again when the call is replayed.
        #[serde(default, skip_serializing_if = "UsageByModel::is_empty")]
        usage: UsageByModel,
    },
    /// A decision on an ASK call (from the approval callback, or from
    /// `AgentRuntime::approve`, possibly in another process).
    Approval {
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// The decision. `ApproveForSession` also grants the tool for the rest of the run.
        decision: ApprovalDecision,
        /// The hash of the call's arguments, as the model sent them
        /// ([`arguments_hash`](crate::arguments_hash)): the decision applies to that
        /// call with exactly those arguments, never to others. Journals written before
        /// decisions were bound have none: such a decision is not applied (the call is
        /// asked about again).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments_hash: Option<String>,
    },
    /// What the pre hooks decided about a call, before it ran: a resume applies it
    /// without asking the hooks again (bound, as a decision is, to the arguments the
    /// model sent).
    Hook {
        /// The call id.
        call_id: String,
        /// The hash of the call's arguments as the model sent them.
        arguments_hash: String,
        /// What the hooks decided.
        outcome: harnessx_core::hooks::PreOutcome,
    },
    /// What the `user_prompt` hooks decided, before the first request: a resume applies
    /// it (the context added, or the block) without asking them again.
    PromptHook {
        /// What the hooks decided.
        outcome: harnessx_core::hooks::PromptOutcome,
    },
    /// What the `model_response` hooks decided about the response of `turn`, before its
    /// calls ran: a resume applies it without asking them again.
    ResponseHook {
        /// The turn.
        turn: u32,
        /// What the hooks decided.
        outcome: harnessx_core::hooks::ResponseOutcome,
    },
    /// A hook ended the run ([`RunStatus::Blocked`]): a blocked prompt or a stopped
    /// response.
    Blocked {
        /// The hook's name.
        hook: String,
        /// Its message.
        message: String,
    },
    /// The run stopped waiting for input.
    Paused {
        /// What is awaited.
        needs_input: Value,
    },
    /// Someone answered whether a `manual` call whose outcome was unknown took effect:
    /// the text becomes the call's result.
    Answer {
        /// The call id.
        call_id: String,
        /// The answer.
        text: String,
    },
    /// The run stopped at a limit (it can be resumed under a higher one).
    LimitReached {
        /// Which limit.
        limit: Limit,
        /// What the run had used.
        usage: Usage,
    },
    /// The final answer.
    Final {
        /// The text.
        output: String,
    },
    /// The run failed (it can be resumed).
    Failed {
        /// The error.
        error: String,
    },
    /// The run's own limits and model price, in place of its agent's: given when it was
    /// started ([`StartOptions`](crate::StartOptions)), or changed on a resume
    /// ([`ResumeOptions`](crate::ResumeOptions)); each such entry's limits replace those
    /// before it that they set, and its price the earlier one.
    Limits {
        /// The limits set (those unset keep their earlier value, or the agent's).
        #[serde(default, skip_serializing_if = "RunLimits::is_empty")]
        limits: RunLimits,
        /// The model's price, when one was given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        price: Option<ModelPrice>,
    },
    /// The run is the next turn of a conversation: it goes on from the messages of run
    /// `run_id` (completed), which may itself continue another
    /// ([`AgentRuntime::continue_conversation`](crate::AgentRuntime::continue_conversation)).
    /// Journaled first, before any other entry of the run.
    Continues {
        /// The run whose conversation this one continues.
        run_id: String,
    },
    /// The run is a fork of run `run_id`: its turns before `turn` are copied from that
    /// run's journal (responses, decisions and results: replayed, never asked or run
    /// again), and it asks its own model from turn `turn` on
    /// ([`AgentRuntime::fork`](crate::AgentRuntime::fork)). Journaled first.
    Forked {
        /// The run it was forked from.
        run_id: String,
        /// The first turn it asked anew (1-based).
        turn: u32,
    },
    /// The run is typed: its answer must fit this output (schema, mode, retries; see
    /// `docs/output.md`). Journaled first (after [`Entry::Continues`]), so a resume checks
    /// the answers the same way and counts the same attempts.
    Output {
        /// The schema as given, the mode and the retries.
        output: harnessx_agent::output::OutputSpec,
    },
}

/// An entry with its position in the run (1, 2, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// Position in the run, from 1, without gaps.
    pub seq: u64,
    /// Milliseconds since the Unix epoch when it was committed.
    pub at_ms: u64,
    /// The step.
    pub entry: Entry,
}

/// What a store failure says. One line; the run stops with it (a journal that cannot be
/// written cannot promise anything).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// `create_run` with an id that exists.
    #[error("a run with id {0:?} already exists; resume it, or start one with another id")]
    RunExists(String),
    /// An id no run has.
    #[error("no run with id {0:?}; `harnessx runs list` shows the runs in this journal")]
    NoSuchRun(String),
    /// The store was written by a newer version.
    #[error("{0}")]
    Version(String),
    /// Another driver (a process, or a task of this one) holds the run.
    #[error(
        "run {0:?} is being driven by another process or task; wait until it stops, then resume it (approve and answer work meanwhile)"
    )]
    Busy(String),
    /// Anything else the storage reported.
    #[error("journal storage error: {0}")]
    Storage(String),
}

/// Keeps journals. Implementations must make [`append`](JournalStore::append) atomic
/// and durable before it returns: all of its entries or none, committed.
///
/// The methods are synchronous: a commit is a few hundred microseconds of fsync, and
/// the runtime calls them where it must wait for the commit anyway.
pub trait JournalStore: Send + Sync {
    /// Creates a run (status [`RunStatus::Running`], no entries). Fails with
    /// [`JournalError::RunExists`] if the id is taken.
    fn create_run(&self, run: &RunRecord) -> Result<(), JournalError>;

    /// The run's header and all its entries in order, or `None`.
    fn load_run(&self, run_id: &str) -> Result<Option<(RunRecord, Vec<JournalEntry>)>, JournalError>;

    /// Appends `entries` after the last one and, with `status`, sets the run's status
    /// (and `output`), all in one commit. Returns the seq of the last entry written.
    /// [`JournalError::NoSuchRun`] if the run does not exist.
    fn append(
        &self,
        run_id: &str,
        entries: &[Entry],
        status: Option<(RunStatus, Option<String>)>,
    ) -> Result<u64, JournalError>;

    /// Every run's header, newest first, without the prompt's media
    /// ([`RunRecord::prompt_parts`] empty).
    fn list_runs(&self) -> Result<Vec<RunRecord>, JournalError>;

    /// Takes the run for one driver, so two processes (or two tasks) never drive the
    /// same run at once: the runtime holds it from loading the journal to its last
    /// commit. Released when the returned guard is dropped, and when the process dies
    /// (a killed driver does not keep the run). [`JournalError::Busy`] while another
    /// driver holds it.
    fn lock_run(&self, run_id: &str) -> Result<RunLock, JournalError>;
}

/// Held while a driver has a run; see [`JournalStore::lock_run`]. Dropping it releases
/// the run.
pub type RunLock = Box<dyn std::any::Any + Send + Sync>;

macro_rules! forward_journal_store {
    ($($ty:ty),*) => {$(
        impl<J: JournalStore + ?Sized> JournalStore for $ty {
            fn create_run(&self, run: &RunRecord) -> Result<(), JournalError> {
                (**self).create_run(run)
            }
            fn load_run(&self, run_id: &str) -> Result<Option<(RunRecord, Vec<JournalEntry>)>, JournalError> {
                (**self).load_run(run_id)
            }
            fn append(
                &self,
                run_id: &str,
                entries: &[Entry],
                status: Option<(RunStatus, Option<String>)>,
            ) -> Result<u64, JournalError> {
                (**self).append(run_id, entries, status)
            }
            fn list_runs(&self) -> Result<Vec<RunRecord>, JournalError> {
                (**self).list_runs()
            }
            fn lock_run(&self, run_id: &str) -> Result<RunLock, JournalError> {
                (**self).lock_run(run_id)
            }
        }
    )*};
}

// A boxed or shared store is a store (wrappers such as a counting or a crash-injecting
// one can hold any of them).
forward_journal_store!(Box<J>, std::sync::Arc<J>);
