//! What goes over the wire: the bodies of the services' handlers, what the workflow
//! keeps in its state, and the configuration a run was started with.

use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};

use harnessx_agent::Agent;
use harnessx_agent::budget::{Limit, ModelPrice, RunLimits};
use harnessx_agent::model::Usage;
use harnessx_agent::output::OutputSpec;
use harnessx_core::{ApprovalDecision, ToolCall};

use crate::runtime::DurableError;

/// A run stopped at a limit, waiting on a durable promise for higher limits
/// (`HarnessxRun/raise`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitStop {
    /// The promise `raise` resolves (`limit/N`: the run's N-th stop at a limit).
    pub key: String,
    /// The limit reached.
    pub limit: Limit,
    /// The limits in force.
    pub limits: RunLimits,
    /// What the run had used.
    pub usage: Usage,
}

/// What a worker's agent is, as far as a run depends on it: its tools' schemas, its
/// model, its system prompt and its tool choice settings when set. The first worker to run a run journals its own; every
/// later step, on whatever worker, is refused by a worker whose configuration differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerConfig {
    /// A digest of the configuration (64-bit FNV-1a of its canonical JSON, in hex).
    pub digest: String,
    /// `tools [..], model .., a system prompt of N characters` (`, tool choice ..` when
    /// set), for the error.
    pub summary: String,
}

impl WorkerConfig {
    /// The configuration of `agent`.
    pub fn of(agent: &Agent) -> Self {
        let (full, summary) = crate::runtime::fingerprint(agent);
        Self { digest: format!("{:016x}", fnv1a(full.as_bytes())), summary }
    }

    /// The error for a step of run `run_id`, started with `started`, reaching this worker.
    pub(super) fn refuse(&self, run_id: &str, started: &Self) -> Result<(), HandlerError> {
        if started.digest == self.digest {
            return Ok(());
        }
        let error = DurableError::Mismatch {
            run_id: run_id.to_owned(),
            was: started.summary.clone(),
            now: self.summary.clone(),
        };
        tracing::error!(run_id, "{error}");
        // Retryable: the run waits, nothing lost, for a worker with its configuration.
        Err(Refused(error.to_string()).into())
    }
}

/// A retryable error whose message reads the same through `Debug`, which is how the SDK
/// reports it to Restate (and so what the admin API's `last_failure` shows).
struct Refused(String);

impl std::fmt::Debug for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// 64-bit FNV-1a: stable across builds and machines (std's hashers are not), and the
/// digest only has to tell configurations apart, not resist an attacker.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// Why a call's outcome is unknown (the recovery rules' type, on the wire).
pub use harnessx_agent::Unknown;

/// What `HarnessxTool/execute` answers: the agent's [`Executed`](harnessx_agent::Executed),
/// as its JSON, with each medium over [`INLINE_MAX`](crate::restate::INLINE_MAX) written as a
/// reference to the shared blob store in place of its base64 (a text-only result is the
/// JSON as it always was).
pub use harnessx_agent::Executed;

/// The input of `HarnessxRun/run`: a prompt, as a JSON string or as
/// `{"prompt": .., "expect": WorkerConfig, "limits": RunLimits, "output": OutputSpec,
/// "price": ModelPrice}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(from = "RunInputWire")]
pub struct RunInput {
    /// What to ask the agent.
    pub prompt: String,
    /// The media attached to the prompt (`"parts"`, absent for none), as the journal
    /// holds them: a list of parts, those larger than
    /// [`INLINE_MAX`](crate::restate::INLINE_MAX) referring to the blob store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<serde_json::Value>,
    /// The configuration the caller expects the workers to have: when set, a run that
    /// lands on workers with another one fails at once instead of running.
    pub expect: Option<WorkerConfig>,
    /// The run's limits, where they differ from the workers' agent's (those set replace
    /// theirs).
    pub limits: Option<RunLimits>,
    /// What a typed run must answer (its schema, mode and retries); `None` for free text.
    /// The workflow's output is then the answer's compact JSON, and `value` gives it as
    /// a JSON value.
    pub output: Option<OutputSpec>,
    /// The model's price in place of the workers' agent's (for its cost and a cost
    /// limit); `None` for theirs.
    pub price: Option<ModelPrice>,
}

#[derive(Deserialize)]
#[serde(untagged)]
// Read once per run and turned into a `RunInput` at once: boxing would buy nothing.
#[allow(clippy::large_enum_variant)]
enum RunInputWire {
    Prompt(String),
    Full {
        prompt: String,
        #[serde(default)]
        parts: Option<serde_json::Value>,
        #[serde(default)]
        expect: Option<WorkerConfig>,
        #[serde(default)]
        limits: Option<RunLimits>,
        #[serde(default)]
        output: Option<OutputSpec>,
        #[serde(default)]
        price: Option<ModelPrice>,
    },
}

impl From<RunInputWire> for RunInput {
    fn from(wire: RunInputWire) -> Self {
        match wire {
            RunInputWire::Prompt(prompt) => {
                Self { prompt, parts: None, expect: None, limits: None, output: None, price: None }
            }
            RunInputWire::Full { prompt, parts, expect, limits, output, price } => {
                Self { prompt, parts, expect, limits, output, price }
            }
        }
    }
}

/// What the workflow asks `HarnessxTool/execute` to run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Invocation {
    /// The call (its permission already decided by the workflow).
    pub call: ToolCall,
    /// The configuration the run was started with.
    pub config: WorkerConfig,
    /// The arguments a person edited the call to run with, when they did (the call's
    /// own arguments are the model's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited: Option<serde_json::Value>,
    /// The arguments a hook rewrote the call to run with, when one did (checked by the
    /// workflow against the schema and the rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewritten: Option<serde_json::Value>,
}

/// The body of `HarnessxRun/approve`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Approval {
    /// The call.
    pub call_id: String,
    /// The decision (`"approve"`, `"approve_for_session"`, `"deny"`).
    pub decision: ApprovalDecision,
}

/// The body of `HarnessxRun/answer`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answer {
    /// The call.
    pub call_id: String,
    /// Whether it took effect, and what it did; becomes its result.
    pub text: String,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        // From the FNV reference (draft-eastlake-fnv): the empty string, "a", "foobar".
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn a_run_input_is_a_bare_prompt_or_an_object() {
        let bare: RunInput = serde_json::from_value(json!("Tidy up")).unwrap();
        assert_eq!(bare.prompt, "Tidy up");
        assert!(
            bare.expect.is_none() && bare.limits.is_none() && bare.output.is_none() && bare.price.is_none()
        );

        let full: RunInput = serde_json::from_value(json!({
            "prompt": "Tidy up",
            "expect": {"digest": "00ff", "summary": "tools []"},
            "limits": {"max_tool_calls": 2},
            "price": {"input": 1.0, "output": 2.0, "cached_input": 0.5, "cache_write": 1.0},
        }))
        .unwrap();
        assert_eq!(full.expect.map(|e| e.digest).as_deref(), Some("00ff"));
        assert_eq!(full.limits.and_then(|l| l.max_tool_calls), Some(2));
        assert_eq!(full.price.map(|p| (p.input, p.output)), Some((1.0, 2.0)));
        // What the client sends for options it does not set: nulls.
        let nulls: RunInput = serde_json::from_value(
            json!({"prompt": "p", "expect": null, "limits": null, "output": null, "price": null}),
        )
        .unwrap();
        assert!(nulls.limits.is_none());
    }

    #[test]
    fn a_run_input_that_is_neither_is_refused() {
        assert!(serde_json::from_value::<RunInput>(json!({"limits": {}})).is_err(), "no prompt");
        assert!(serde_json::from_value::<RunInput>(json!(42)).is_err());
    }

    #[test]
    fn an_executed_call_leaves_out_empty_usage_and_reads_back_the_same() {
        let executed = Executed {
            result: harnessx_core::ToolResult::error("c1", "t", "outcome unknown"),
            unknown: Some(Unknown::Interrupted),
            paused: None,
            usage: harnessx_agent::budget::UsageByModel::new(),
        };
        let value = serde_json::to_value(&executed).unwrap();
        assert_eq!(value.get("usage"), None, "{value}");
        assert_eq!(value.get("paused"), None, "{value}");
        let back: Executed = serde_json::from_value(value).unwrap();
        assert_eq!((back.result, back.unknown), (executed.result, executed.unknown));
    }

    #[test]
    fn an_invocation_carries_edited_arguments_only_when_a_person_gave_some() {
        let config = WorkerConfig { digest: "d".into(), summary: "s".into() };
        let plain = Invocation {
            call: ToolCall::new("c1", "t", "{}"),
            config: config.clone(),
            edited: None,
            rewritten: None,
        };
        assert_eq!(serde_json::to_value(&plain).unwrap().get("edited"), None);
        let edited = Invocation { edited: Some(json!({"n": 2})), ..plain };
        let back: Invocation = serde_json::from_value(serde_json::to_value(&edited).unwrap()).unwrap();
        assert_eq!((back.call.id.as_str(), back.edited), ("c1", Some(json!({"n": 2}))));
    }

    #[test]
    fn approvals_answers_and_limit_stops_keep_their_wire_names() {
        let approval: Approval =
            serde_json::from_value(json!({"call_id": "c1", "decision": "approve_for_session"})).unwrap();
        assert_eq!(approval.decision, ApprovalDecision::ApproveForSession);
        let answer: Answer = serde_json::from_value(json!({"call_id": "c1", "text": "it was sent"})).unwrap();
        assert_eq!(answer.text, "it was sent");
        let stop = LimitStop {
            key: "limit/1".into(),
            limit: Limit::ToolCalls,
            limits: RunLimits { max_tool_calls: Some(2), ..RunLimits::default() },
            usage: Usage::default(),
        };
        let value = serde_json::to_value(&stop).unwrap();
        assert_eq!((&value["key"], &value["limit"]), (&json!("limit/1"), &json!("tool_calls")));
        assert_eq!(serde_json::from_value::<LimitStop>(value).unwrap(), stop);
    }
}
