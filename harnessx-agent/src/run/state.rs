//! [`RunState`]: where a run stands, on every backend (direct, SQLite, Restate).

use serde::{Deserialize, Serialize};

use crate::model::{FinishReason, Message, Usage};

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Running, or interrupted (the process died): a durable run's `resume` continues it.
    #[default]
    Running,
    /// Stopped until someone answers: an approval, or whether a call took effect.
    NeedsInput,
    /// Finished with a final answer.
    Completed,
    /// Finished with an error (model failure, too many turns); `resume` tries again.
    Failed,
}

impl RunStatus {
    /// The name used in journals and in `--json` output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::NeedsInput => "needs_input",
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }

    /// Parses [`RunStatus::as_str`].
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "running" => Self::Running,
            "needs_input" => Self::NeedsInput,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            _ => return None,
        })
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a durable run stopped to wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NeedsInputKind {
    /// An ASK call with no one to approve it: `approve` decides.
    Approval,
    /// A `manual` call that started and has no result (the process died, or it timed
    /// out): did it take effect? `answer` says.
    Outcome,
}

impl NeedsInputKind {
    /// `"approval"` or `"answer"`, as the CLI and errors name what is awaited.
    pub fn noun(self) -> &'static str {
        match self {
            Self::Approval => "approval",
            Self::Outcome => "answer",
        }
    }
}

/// A call a durable run stopped on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NeedsInput {
    /// What is awaited.
    pub kind: NeedsInputKind,
    /// The call id.
    pub call_id: String,
    /// The tool name.
    pub tool: String,
    /// The call's arguments (JSON text, as the model sent them).
    pub arguments: String,
    /// Why input is needed, in a sentence.
    pub reason: String,
}

/// Where a run stands, and what it produced: what [`Agent::run`](crate::Agent::run),
/// a durable `AgentRuntime` and a Restate run all report.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunState {
    /// The durable run's id; `None` for a direct run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Completed, waiting for input (durable runs only), running or failed.
    pub status: RunStatus,
    /// The final answer (empty until the run completes); a typed run's is its value as
    /// compact JSON.
    pub output: String,
    /// A typed run's answer, once completed: the value its output schema admitted
    /// (`docs/output.md`). `None` for a free-text run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
    /// The whole conversation so far, including the final answer.
    pub messages: Vec<Message>,
    /// Tokens used.
    pub usage: Usage,
    /// Model responses so far.
    pub turns: u32,
    /// Why the model stopped on its last response: [`FinishReason::Length`] on a final
    /// answer means it was cut off at the output token limit.
    pub finish_reason: FinishReason,
    /// Everything the run waits for, when [`RunStatus::NeedsInput`] (every question of
    /// the batch, not only the first). Always empty for a direct run, which denies an
    /// ASK nobody can approve and answers timeouts to the model.
    pub needs_input: Vec<NeedsInput>,
    /// Why the run failed, once [`RunStatus::Failed`]; while a run on Restate is running,
    /// why its last attempt failed (a worker with another configuration, a dead worker),
    /// when the cluster says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The outcome of a run: a [`RunState`] (the name the spec uses for `agent.run`).
pub type RunResult = RunState;

impl RunState {
    /// Whether the run finished with a final answer.
    pub fn is_completed(&self) -> bool {
        self.status == RunStatus::Completed
    }

    /// A typed run's answer decoded into `T` (see
    /// [`Agent::run_typed`](crate::Agent::run_typed)); an error when the run has no value
    /// or it does not decode.
    pub fn value_as<T: serde::de::DeserializeOwned>(&self) -> Result<T, crate::OutputError> {
        crate::output::decode(self.value.as_ref())
    }

    /// What the run came to: the final answer once completed, the error once failed,
    /// nothing while it runs or waits.
    pub fn outcome(&self) -> Option<&str> {
        match self.status {
            RunStatus::Completed => Some(&self.output),
            RunStatus::Failed => self.error.as_deref(),
            RunStatus::Running | RunStatus::NeedsInput => None,
        }
    }
}
