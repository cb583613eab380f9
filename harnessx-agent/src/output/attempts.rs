//! One typed run's attempts at its answer: what the run loop calls at its few marked
//! places (`[output]` in `run/engine.rs`). Everything here is decided from the responses
//! alone, so a durable run that replays its journal counts the same attempts.
//!
//! - [`Attempts::prepare`]: the first request gets the `final_result` tool (mode
//!   `tool`), the answer format (`native`) or the schema in the system prompt
//!   (`prompted`); [`Attempts::tools_refreshed`] puts the tool back when the tool list
//!   is refreshed.
//! - [`Attempts::answer`]: a text answer (no tool calls). In `native` and `prompted` it
//!   is the attempt; in `tool` it is an attempt that did not call `final_result`.
//! - [`Attempts::settle_calls`]: the `final_result` calls of a turn are answered without
//!   running (checked against the schema), so the batch's other calls run as the batch
//!   rules say; [`Attempts::after_batch`] then ends the run on an accepted answer.
//!
//! A refused answer is asked again with its one-line error (a tool result for a
//! `final_result` call, a user message for a text answer), up to the retries; one more
//! refusal fails the run with that error.

use serde_json::Value;

use harnessx_core::tool::name::{repair_key, strip_known_prefixes};
use harnessx_core::{PlannedBatch, ToolOutput, ToolResult, ToolSpec};

use super::schema::OutputSchema;
use super::{Decode, FINAL_RESULT_TOOL, Output, OutputError, OutputMode, answer_json};
use crate::model::{ModelRequest, OutputFormat};
use crate::{Agent, AgentError};

/// The description of the `final_result` tool.
pub(crate) const FINAL_RESULT_DESCRIPTION: &str =
    "Give the final answer. Call it once the work is done: its arguments are the answer, and the run ends.";

/// The result a `final_result` call gets when its arguments are the answer.
pub(crate) const ACCEPTED: &str = "Final answer accepted.";

/// The result of a second `final_result` call of a turn whose first was accepted.
pub(crate) const NOT_USED: &str = "Not used: an earlier final_result call of this turn is the final answer.";

/// How the system prompt asks for the answer in mode `prompted` (the schema follows).
pub(crate) const PROMPTED_LINE: &str = "Give your final answer as one JSON value that matches the JSON Schema below, with nothing before or after it (a ```json fence around it is fine). Use tools first if you need them.";

/// What became of an answer.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// The run ends with this value.
    Accepted(Value),
    /// Refused: the model is asked again; a text answer's message for it.
    Retry(Option<String>),
    /// No answer in this turn: the run goes on.
    Continue,
    /// Refused once more than the retries allow.
    Failed(AgentError),
}

/// One run's attempts (see the [module docs](self)).
pub(crate) struct Attempts {
    schema: std::sync::Arc<OutputSchema>,
    decode: Option<Decode>,
    mode: OutputMode,
    retries: u32,
    refused: u32,
    /// The `final_result` answer of the turn being run, and whether one was refused.
    turn_answer: Option<Value>,
    turn_error: Option<String>,
}

impl Attempts {
    /// Checks `output` for a run of `agent`: a usable schema, and in mode `tool` no
    /// registered tool that a `final_result` call would be taken for.
    pub(crate) fn start(output: Output, agent: &Agent) -> Result<Self, AgentError> {
        let config = agent.config();
        let mode = output.mode.unwrap_or(config.output_mode);
        let retries = output.retries.unwrap_or(config.output_retries);
        let schema = output.schema.map_err(|e| AgentError::Output(OutputError::Schema(e)))?;
        if mode == OutputMode::Tool {
            let key = repair_key(FINAL_RESULT_TOOL);
            if let Some(taken) = agent.tools().tool_names().into_iter().find(|n| repair_key(n) == key) {
                return Err(AgentError::Output(OutputError::ToolNameTaken(taken)));
            }
        }
        Ok(Self {
            schema,
            decode: output.decode,
            mode,
            retries,
            refused: 0,
            turn_answer: None,
            turn_error: None,
        })
    }

    /// The first request asks for the answer as the mode says.
    pub(crate) fn prepare(&self, request: &mut ModelRequest) {
        match self.mode {
            OutputMode::Tool => self.tools_refreshed(&mut request.tools),
            OutputMode::Native => {
                request.output = Some(OutputFormat {
                    name: FINAL_RESULT_TOOL.into(),
                    schema: self.schema.shown().clone(),
                    native: true,
                });
            }
            OutputMode::Prompted => {
                let line = format!("{PROMPTED_LINE}\n\n{}", self.schema.shown());
                request.system = Some(match request.system.take() {
                    Some(system) => format!("{system}\n\n{line}"),
                    None => line,
                });
                request.output = Some(OutputFormat {
                    name: FINAL_RESULT_TOOL.into(),
                    schema: self.schema.shown().clone(),
                    native: false,
                });
            }
        }
    }

    /// The tool list was refreshed: the `final_result` tool goes back at its end.
    pub(crate) fn tools_refreshed(&self, tools: &mut Vec<ToolSpec>) {
        if self.mode == OutputMode::Tool && !tools.iter().any(|t| t.name == FINAL_RESULT_TOOL) {
            tools.push(ToolSpec {
                name: FINAL_RESULT_TOOL.into(),
                description: FINAL_RESULT_DESCRIPTION.into(),
                input_schema: self.schema.shown().clone(),
            });
        }
    }

    /// A text answer (a response without tool calls).
    pub(crate) fn answer(&mut self, text: &str) -> Verdict {
        let checked = match self.mode {
            OutputMode::Tool => Err(format!(
                "invalid output: the final answer must be given by calling the {FINAL_RESULT_TOOL} tool"
            )),
            OutputMode::Native | OutputMode::Prompted => {
                answer_json(text).map_err(|e| format!("invalid output: {e}")).and_then(|mut answer| {
                    if self.mode == OutputMode::Native {
                        self.schema.drop_strict_nulls(&mut answer);
                    }
                    self.schema.check(answer, "invalid output", self.decode.as_deref())
                })
            }
        };
        match checked {
            Ok(value) => Verdict::Accepted(value),
            Err(line) => match self.refuse(line) {
                Verdict::Retry(_) => Verdict::Retry(Some(self.retry_message())),
                other => other,
            },
        }
    }

    /// Answers the `final_result` calls of a turn (mode `tool`) without running them:
    /// the first whose arguments fit is the answer (a later one is not used), the others
    /// get their error. The rest of the batch is untouched.
    pub(crate) fn settle_calls(&mut self, batch: &mut PlannedBatch) {
        self.turn_answer = None;
        self.turn_error = None;
        if self.mode != OutputMode::Tool {
            return;
        }
        let key = repair_key(FINAL_RESULT_TOOL);
        for mut planned in batch.iter_mut() {
            let call = planned.call();
            if repair_key(strip_known_prefixes(&call.name)) != key {
                continue;
            }
            let result = if self.turn_answer.is_some() {
                ToolResult::success(&call.id, FINAL_RESULT_TOOL, ToolOutput::from(NOT_USED))
            } else {
                match self.check_arguments(&call.arguments) {
                    Ok(value) => {
                        self.turn_answer = Some(value);
                        ToolResult::success(&call.id, FINAL_RESULT_TOOL, ToolOutput::from(ACCEPTED))
                    }
                    Err(line) => {
                        let result = ToolResult::error(&call.id, FINAL_RESULT_TOOL, line.clone());
                        self.turn_error = Some(line);
                        result
                    }
                }
            };
            planned.settle(result);
        }
    }

    /// After the batch ran: the answer its `final_result` call gave, a refusal (its
    /// error already in the call's result), or nothing.
    pub(crate) fn after_batch(&mut self) -> Verdict {
        if let Some(value) = self.turn_answer.take() {
            return Verdict::Accepted(value);
        }
        match self.turn_error.take() {
            Some(line) => self.refuse(line),
            None => Verdict::Continue,
        }
    }

    fn check_arguments(&self, arguments: &str) -> Result<Value, String> {
        let subject = format!("invalid arguments for {FINAL_RESULT_TOOL}");
        if harnessx_core::depth::text_too_deep(arguments, harnessx_core::MAX_JSON_DEPTH) {
            return Err(format!(
                "{subject}: the arguments nest more than {} levels deep",
                harnessx_core::MAX_JSON_DEPTH
            ));
        }
        let answer: Value = match serde_json::from_str(arguments) {
            Ok(answer @ Value::Object(_)) => answer,
            Ok(_) => return Err(format!("{subject}: expected a JSON object")),
            Err(e) => return Err(format!("{subject}: the arguments are not JSON ({e})")),
        };
        self.schema.check(answer, &subject, self.decode.as_deref())
    }

    /// Counts a refusal: asked again while retries are left, else the run fails.
    fn refuse(&mut self, line: String) -> Verdict {
        self.refused += 1;
        tracing::info!(attempt = self.refused, error = %line, "the answer did not fit the output schema");
        if self.refused > self.retries {
            return Verdict::Failed(AgentError::Output(OutputError::Exhausted {
                attempts: self.refused,
                error: line,
            }));
        }
        self.turn_error = Some(line);
        Verdict::Retry(None)
    }

    /// The user message that asks again after a refused text answer.
    fn retry_message(&mut self) -> String {
        let line = self.turn_error.take().unwrap_or_default();
        match self.mode {
            OutputMode::Tool => format!("{line}. Call {FINAL_RESULT_TOOL} with the answer."),
            OutputMode::Native | OutputMode::Prompted => {
                format!("{line}\nAnswer again with only the corrected JSON.")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_final_result_name_is_repaired_like_tool_names() {
        let key = repair_key(FINAL_RESULT_TOOL);
        for name in ["final_result", "functions.final_result", "finalResult", "Final-Result"] {
            assert_eq!(repair_key(strip_known_prefixes(name)), key, "{name}");
        }
        assert_ne!(repair_key(strip_known_prefixes("final_results")), key);
    }
}
