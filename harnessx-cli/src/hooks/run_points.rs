//! The run points of a command hook (`--hook user_prompt=COMMAND`, `model_response=`,
//! `run_end=`; no matcher). What the command reads on stdin:
//!
//! - `user_prompt`: `{"hook": "user_prompt", "run_id", "prompt", "usage"}`;
//! - `model_response`: `{"hook": "model_response", "run_id", "turn", "text", "tool_calls":
//!   [{"id", "name", "arguments"}], "usage"}`;
//! - `run_end`: `{"hook": "run_end", "run_id", "status", "output", "error", "blocked",
//!   "turns", "usage"}`.
//!
//! How it answers: exit 0 with nothing on stdout, no opinion; exit 0 with
//! `{"decision": "block", "message": ..}` or `{"context": ..}` for a prompt,
//! `{"decision": "stop", "message": ..}` for a response; exit 2 blocks the prompt or stops
//! the run, with stderr as the message the person reads. Anything else is an error naming
//! the hook, which blocks (or stops) too: the run points fail closed. A `run_end` hook's
//! answer is not read; a status other than 0 is logged.

use harnessx::hooks::{HookError, ModelTurn, PromptDecision, ResponseDecision, RunEnd, UserPrompt};
use serde_json::{Value, json};

use super::{CommandHook, exited, one_line};

/// What a `user_prompt` or `model_response` command may print.
#[derive(Debug, Default, serde::Deserialize)]
struct Answer {
    /// `block` (a prompt) or `stop` (a response).
    decision: Option<String>,
    /// Why, for the person.
    message: Option<String>,
    /// Context for the model (a prompt).
    context: Option<String>,
}

impl CommandHook {
    /// Runs the command on `input` for a point that blocks: `Ok(None)` for no opinion,
    /// `Ok(Some(answer))` for what it printed, the message of an exit 2 as a `decision`
    /// of `refusal` (`block` or `stop`).
    async fn ask_run(
        &self,
        input: Value,
        refusal: &str,
        otherwise: &str,
    ) -> Result<Option<Answer>, HookError> {
        let (status, out, err) = self.run(input).await?;
        match status {
            0 => {}
            2 => {
                let message = Some(one_line(&err, otherwise));
                return Ok(Some(Answer { decision: Some(refusal.to_owned()), message, context: None }));
            }
            other => return Err(exited(other, &err)),
        }
        let Some(object) = Self::object(&out)? else { return Ok(None) };
        serde_json::from_value(Value::Object(object))
            .map(Some)
            .map_err(|e| HookError(format!("answered an object that does not fit: {e}")))
    }

    pub(super) async fn ask_prompt(&self, prompt: UserPrompt<'_>) -> Result<PromptDecision, HookError> {
        let input = json!({
            "hook": "user_prompt",
            "run_id": prompt.run_id,
            "prompt": prompt.prompt,
            "usage": prompt.usage,
        });
        let Some(answer) = self.ask_run(input, "block", "blocked by a hook").await? else {
            return Ok(PromptDecision::Continue);
        };
        let message = answer.message.unwrap_or_else(|| "blocked by a hook".into());
        match (answer.decision.as_deref(), answer.context) {
            (Some("block"), _) => Ok(PromptDecision::Block { message }),
            (None, Some(text)) => Ok(PromptDecision::AddContext { text }),
            (None, None) => Ok(PromptDecision::Continue),
            (Some(other), _) => Err(HookError(format!("answered an unknown decision {other:?}"))),
        }
    }

    pub(super) async fn ask_response(&self, response: ModelTurn<'_>) -> Result<ResponseDecision, HookError> {
        let calls: Vec<Value> = response
            .tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
            .collect();
        let input = json!({
            "hook": "model_response",
            "run_id": response.run_id,
            "turn": response.turn,
            "text": response.text,
            "tool_calls": calls,
            "usage": response.usage,
        });
        let Some(answer) = self.ask_run(input, "stop", "stopped by a hook").await? else {
            return Ok(ResponseDecision::Continue);
        };
        let message = answer.message.unwrap_or_else(|| "stopped by a hook".into());
        match answer.decision.as_deref() {
            Some("stop") => Ok(ResponseDecision::Stop { message }),
            None => Ok(ResponseDecision::Continue),
            Some(other) => Err(HookError(format!("answered an unknown decision {other:?}"))),
        }
    }

    pub(super) async fn tell_end(&self, end: RunEnd<'_>) -> Result<(), HookError> {
        let input = json!({
            "hook": "run_end",
            "run_id": end.run_id,
            "status": end.status,
            "output": end.output,
            "error": end.error,
            "blocked": end.blocked,
            "turns": end.turns,
            "usage": end.usage,
        });
        match self.run(input).await? {
            (0, _, _) => Ok(()),
            (status, _, err) => Err(exited(status, &err)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use harnessx::hooks::ToolHook;

    use super::*;
    use crate::hooks::{Matcher, Point};

    fn hook(command: &str, point: Point) -> (CommandHook, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let hook =
            CommandHook::new(command, Matcher::Any, dir.path().to_owned(), Duration::from_secs(5), point);
        (hook, dir)
    }

    fn prompt() -> UserPrompt<'static> {
        UserPrompt { prompt: "deploy", run_id: Some("r1"), usage: Default::default() }
    }

    fn turn() -> ModelTurn<'static> {
        ModelTurn { turn: 2, text: "done", tool_calls: &[], run_id: None, usage: Default::default() }
    }

    #[tokio::test]
    async fn a_prompt_hook_blocks_adds_context_or_has_no_opinion() {
        let block = |m: &str| PromptDecision::Block { message: m.into() };
        for (command, expected) in [
            ("true", PromptDecision::Continue),
            ("echo '{}'", PromptDecision::Continue),
            (
                r#"echo '{"context": "branch: main"}'"#,
                PromptDecision::AddContext { text: "branch: main".into() },
            ),
            (r#"echo '{"decision": "block", "message": "not today"}'"#, block("not today")),
            (r#"echo '{"decision": "block"}'"#, block("blocked by a hook")),
            ("echo 'no deploys' >&2; exit 2", block("no deploys")),
            ("exit 2", block("blocked by a hook")),
        ] {
            let (h, _dir) = hook(command, Point::UserPrompt);
            assert_eq!(h.user_prompt(prompt()).await.unwrap(), expected, "{command}");
        }
    }

    #[tokio::test]
    async fn a_response_hook_stops_the_run_or_has_no_opinion() {
        let stop = |m: &str| ResponseDecision::Stop { message: m.into() };
        for (command, expected) in [
            ("true", ResponseDecision::Continue),
            (r#"echo '{"decision": "stop", "message": "leak"}'"#, stop("leak")),
            ("echo 'a secret' >&2; exit 2", stop("a secret")),
        ] {
            let (h, _dir) = hook(command, Point::ModelResponse);
            assert_eq!(h.model_response(turn()).await.unwrap(), expected, "{command}");
        }
    }

    #[tokio::test]
    async fn each_run_point_reads_its_object_on_stdin() {
        let (h, dir) = hook("cat > seen.json", Point::UserPrompt);
        h.user_prompt(prompt()).await.unwrap();
        let seen = |dir: &tempfile::TempDir| -> Value {
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("seen.json")).unwrap()).unwrap()
        };
        let usage = json!({"input_tokens": 0, "output_tokens": 0, "requests": 0, "tool_calls": 0});
        assert_eq!(
            seen(&dir),
            json!({"hook": "user_prompt", "run_id": "r1", "prompt": "deploy", "usage": usage})
        );
        let (h, dir) = hook("cat > seen.json", Point::ModelResponse);
        let calls = [harnessx::ToolCall::new("c1", "read_file", r#"{"path":"a"}"#)];
        h.model_response(ModelTurn { tool_calls: &calls, ..turn() }).await.unwrap();
        assert_eq!(
            seen(&dir),
            json!({"hook": "model_response", "run_id": null, "turn": 2, "text": "done",
                   "tool_calls": [{"id": "c1", "name": "read_file", "arguments": r#"{"path":"a"}"#}], "usage": usage})
        );
        let (h, dir) = hook("cat > seen.json", Point::RunEnd);
        let blocked = harnessx::hooks::Blocked { hook: "h".into(), message: "m".into() };
        let end = RunEnd {
            run_id: Some("r1"),
            status: "blocked",
            output: "",
            error: None,
            blocked: Some(&blocked),
            turns: 0,
            usage: Default::default(),
        };
        h.run_end(end).await.unwrap();
        assert_eq!(
            seen(&dir),
            json!({"hook": "run_end", "run_id": "r1", "status": "blocked", "output": "", "error": null,
                   "blocked": {"hook": "h", "message": "m"}, "turns": 0, "usage": usage})
        );
        // A hook is asked only at its own point.
        let (h, dir) = hook("touch asked", Point::RunEnd);
        h.user_prompt(prompt()).await.unwrap();
        h.model_response(turn()).await.unwrap();
        assert!(!dir.path().join("asked").exists());
    }

    #[tokio::test]
    async fn a_run_hook_that_misbehaves_is_an_error_and_never_hangs() {
        for (command, expected) in [
            ("echo broken >&2; exit 1", "exited with status 1: broken"),
            ("echo garbage", "printed something that is not a JSON object"),
            (r#"echo '{"decision": "maybe"}'"#, "answered an unknown decision \"maybe\""),
            (r#"echo '{"context": 3}'"#, "answered an object that does not fit"),
        ] {
            let (h, _dir) = hook(command, Point::UserPrompt);
            let error = h.user_prompt(prompt()).await.unwrap_err().0;
            assert!(error.starts_with(expected), "{command}: {error}");
        }
        let dir = tempfile::tempdir().unwrap();
        let slow = CommandHook::new(
            "sleep 30",
            Matcher::Any,
            dir.path().to_owned(),
            Duration::from_millis(200),
            Point::UserPrompt,
        );
        let started = std::time::Instant::now();
        assert_eq!(slow.user_prompt(prompt()).await.unwrap_err().0, "did not finish within 0.2s");
        assert!(started.elapsed() < Duration::from_secs(10));
        let (h, _dir) = hook("exit 3", Point::RunEnd);
        let end = RunEnd {
            run_id: None,
            status: "completed",
            output: "",
            error: None,
            blocked: None,
            turns: 1,
            usage: Default::default(),
        };
        assert_eq!(h.run_end(end).await.unwrap_err().0, "exited with status 3 (nothing on stderr)");
    }
}
