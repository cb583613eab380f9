//! [`RunState`]: where a run stands, on every backend (direct, SQLite, Restate).

use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use crate::budget::Limit;
use crate::model::{FinishReason, Message, Usage};
pub use harnessx_core::hooks::Blocked;

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
    /// Finished with an error (a model failure); `resume` tries again.
    Failed,
    /// Stopped at a limit ([`RunState::limit`] says which): a distinct end, not an error.
    /// A durable run pauses there; resuming it under a higher limit continues it.
    LimitReached,
    /// Ended by a hook: a `user_prompt` hook blocked the prompt (no model request was
    /// made), or a `model_response` hook stopped the run ([`RunState::blocked`] says which
    /// hook, and why). A distinct end, not an error.
    Blocked,
}

impl RunStatus {
    /// The name used in journals and in `--json` output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::NeedsInput => "needs_input",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::LimitReached => "limit_reached",
            Self::Blocked => "blocked",
        }
    }

    /// Parses [`RunStatus::as_str`].
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "running" => Self::Running,
            "needs_input" => Self::NeedsInput,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "limit_reached" => Self::LimitReached,
            "blocked" => Self::Blocked,
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
    /// A question the model put to a person (a call of a
    /// [question tool](crate::AgentBuilder::question_tool), `ask_user`): `reason` is the
    /// question, `arguments` the call's (its `choices` too); `answer` gives the reply.
    Question,
    /// A tool's server refused its credentials and they could not be refreshed (an MCP
    /// server behind OAuth): `reason` names the server and the login command. After the
    /// login, `resume` runs the call again.
    Auth,
    /// A tool's server asked a question mid-call (MCP's elicitation): `reason` is the
    /// question, `schema` the answer's. `answer` gives a JSON object fitting it, or
    /// `decline` or `cancel`; the call then runs again and the server gets the answer.
    Elicitation,
}

impl NeedsInputKind {
    /// `"approval"` or `"answer"`, as the CLI and errors name what is awaited.
    pub fn noun(self) -> &'static str {
        match self {
            Self::Approval => "approval",
            Self::Outcome | Self::Question | Self::Elicitation => "answer",
            Self::Auth => "login",
        }
    }

    /// Whether `answer` gives it (an outcome, a question's reply, a server's question);
    /// `approve` gives an approval; a login and `resume` settle [`Auth`](Self::Auth).
    pub fn takes_answer(self) -> bool {
        matches!(self, Self::Outcome | Self::Question | Self::Elicitation)
    }

    /// What is awaited, with its article, as errors say it: `an approval`, `an answer`,
    /// `a login`.
    pub fn awaited(self) -> &'static str {
        match self {
            Self::Approval => "an approval",
            Self::Outcome | Self::Question | Self::Elicitation => "an answer",
            Self::Auth => "a login",
        }
    }

    /// The word `--json` events and the API use for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approval => "approval",
            Self::Outcome => "outcome",
            Self::Question => "question",
            Self::Auth => "auth",
            Self::Elicitation => "elicitation",
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
    /// For [`Elicitation`](NeedsInputKind::Elicitation), the answer's JSON schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<serde_json::Value>,
}

impl NeedsInput {
    /// What a person's `text` answers to this need, for the call that runs again: for an
    /// [`Elicitation`](NeedsInputKind::Elicitation), `decline`, `cancel`, or a JSON
    /// object checked against [`schema`](Self::schema), as MCP's result
    /// (`{"action":"accept","content":{..}}`, `{"action":"decline"}`,
    /// `{"action":"cancel"}`) in compact JSON; the text as it is otherwise. The error is
    /// one line naming the field.
    pub fn checked_answer(&self, text: &str) -> Result<String, String> {
        if self.kind != NeedsInputKind::Elicitation {
            return Ok(text.to_owned());
        }
        let action = |a: &str| serde_json::json!({ "action": a }).to_string();
        match text.trim() {
            "decline" => return Ok(action("decline")),
            "cancel" => return Ok(action("cancel")),
            _ => {}
        }
        let content: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            format!("the answer is not JSON ({e}): give an object fitting the server's schema, `decline` or `cancel`")
        })?;
        if !content.is_object() {
            return Err("the answer is not a JSON object: give an object fitting the server's schema, `decline` or `cancel`".to_owned());
        }
        if let Some(schema) = &self.schema {
            let checked = harnessx_core::schema::ValueSchema::compile(schema)
                .map_err(|e| format!("the server's schema cannot be checked: {e}"))?;
            if let Some(error) = checked.check("the answer", &content) {
                return Err(error);
            }
        }
        Ok(serde_json::json!({ "action": "accept", "content": content }).to_string())
    }
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
    /// What the run used: tokens (cached and reasoning ones too), requests, tool calls
    /// and, when the model's price is known, the cost; a specialist's usage included.
    pub usage: Usage,
    /// [`usage`](Self::usage) by model name (`openai:gpt-4o`): the agent's model and its
    /// specialists' (empty where a backend does not keep it).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub usage_by_model: BTreeMap<String, Usage>,
    /// [`usage`](Self::usage) by turn: the response of each turn, its tool calls and
    /// what its specialists used (empty where a backend does not keep it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub usage_by_turn: Vec<Usage>,
    /// The limit the run stopped at, once [`RunStatus::LimitReached`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<Limit>,
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
    /// Which hook blocked the run, and its message, once [`RunStatus::Blocked`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked: Option<Blocked>,
}

/// The outcome of a run: a [`RunState`] (the name the spec uses for `agent.run`).
pub type RunResult = RunState;

/// How a run ended, or where it stands: [`RunState::run_outcome`].
///
/// ```
/// use harnessx_agent::{Agent, AgentConfig, RunLimits, RunOutcome};
/// use harnessx_agent::model::TestModel;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// // The test model calls the planning tools, then answers: one turn is not enough.
/// let agent = Agent::builder()
///     .model(TestModel::new())
///     .config(AgentConfig {
///         limits: RunLimits { max_turns: Some(1), ..RunLimits::default() },
///         ..AgentConfig::default()
///     })
///     .build()
///     .unwrap();
/// match agent.run("Make a plan.").await.unwrap().run_outcome() {
///     RunOutcome::LimitReached { limit, usage } => {
///         assert_eq!((limit.as_str(), usage.requests), ("turns", 1));
///     }
///     other => panic!("{other:?}"),
/// }
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum RunOutcome<'a> {
    /// A final answer.
    Completed {
        /// The answer.
        output: &'a str,
    },
    /// Stopped at a limit: not an error.
    LimitReached {
        /// Which one.
        limit: Limit,
        /// What the run used.
        usage: Usage,
    },
    /// Waiting for input (a durable run).
    NeedsInput {
        /// Everything it waits for.
        needs: &'a [NeedsInput],
    },
    /// Ended by a hook (a blocked prompt, a stopped response): not an error.
    Blocked {
        /// The hook's name.
        hook: &'a str,
        /// Its message.
        message: &'a str,
    },
    /// Failed; a durable run can be resumed.
    Failed {
        /// Why.
        error: &'a str,
    },
    /// Still running, or interrupted.
    Running,
}

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
    /// the hook's message once blocked, nothing while it runs or waits, or once it
    /// stopped at a limit ([`run_outcome`](Self::run_outcome) says which).
    pub fn outcome(&self) -> Option<&str> {
        match self.status {
            RunStatus::Completed => Some(&self.output),
            RunStatus::Failed => self.error.as_deref(),
            RunStatus::Blocked => self.blocked.as_ref().map(|b| b.message.as_str()),
            RunStatus::Running | RunStatus::NeedsInput | RunStatus::LimitReached => None,
        }
    }

    /// How the run ended, or where it stands, with what goes with it.
    pub fn run_outcome(&self) -> RunOutcome<'_> {
        match self.status {
            RunStatus::Completed => RunOutcome::Completed { output: &self.output },
            RunStatus::LimitReached => {
                RunOutcome::LimitReached { limit: self.limit.unwrap_or(Limit::Turns), usage: self.usage }
            }
            RunStatus::NeedsInput => RunOutcome::NeedsInput { needs: &self.needs_input },
            RunStatus::Failed => RunOutcome::Failed { error: self.error.as_deref().unwrap_or_default() },
            RunStatus::Blocked => RunOutcome::Blocked {
                hook: self.blocked.as_ref().map_or("", |b| b.hook.as_str()),
                message: self.blocked.as_ref().map_or("", |b| b.message.as_str()),
            },
            RunStatus::Running => RunOutcome::Running,
        }
    }
}
