//! `run_bash`: the handler, its schema, and how a command's output reads to the model.

use std::sync::Arc;
use std::time::Duration;

use harnessx_core::tool::decode::decode_args;
use harnessx_core::{
    AsyncToolHandler, BoxFuture, CommandEnd, CommandOutput, HandlerResult, OutputStream, Parts, Sandbox,
    SandboxCommand, ToolContext, ToolError, ToolOutput,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::RUN_BASH_TIMEOUT_SECONDS;

pub(super) const DESCRIPTION: &str = "Run a bash command (`bash -c COMMAND`) in the sandbox's working directory and return its exit code and output: stdout and stderr, labelled, in the order they were written. stdin is empty and there is no terminal, so interactive programs get end-of-file at once. When the command ends, every process it started is stopped, so background processes do not outlive the call. Very long output stops the command: redirect it to a file and read parts of it.";

/// The handler: one sandbox, the output limit and the added environment.
pub(super) struct RunBash {
    pub(super) sandbox: Arc<dyn Sandbox>,
    pub(super) output_limit: usize,
    pub(super) env: Vec<(String, String)>,
}

#[derive(Deserialize)]
struct Args {
    command: String,
    timeout: Option<f64>,
}

impl AsyncToolHandler for RunBash {
    fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<HandlerResult> {
        let sandbox = self.sandbox.clone();
        let (output_limit, env) = (self.output_limit, self.env.clone());
        Box::pin(async move {
            let Args { command, timeout } = decode_args(args, &ctx)?;
            let timeout = command_timeout(timeout);
            let request = SandboxCommand { script: command, timeout, output_limit, env };
            let output = sandbox.run(request).await.map_err(|e| ToolError::new(e.to_string()))?;
            Ok(render(&output, timeout, output_limit))
        })
    }
}

/// The command's own limit: the `timeout` argument, else the tool's; in either case a
/// second short of the tool's 300 s, so that the command is stopped (and its partial
/// output returned) before the call itself times out.
fn command_timeout(requested: Option<f64>) -> Duration {
    let ceiling = RUN_BASH_TIMEOUT_SECONDS - 1.0;
    Duration::from_secs_f64(requested.unwrap_or(ceiling).clamp(0.001, ceiling))
}

/// The input schema: `command`, and an optional `timeout` in seconds (at most the tool's
/// own limit).
pub(super) fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "minLength": 1,
                "description": "The bash command or script to run."
            },
            "timeout": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": RUN_BASH_TIMEOUT_SECONDS,
                "description": "Seconds after which the command and everything it started are stopped (default and most: 300)."
            }
        },
        "required": ["command"],
        "additionalProperties": false
    })
}

/// The result: each stretch of output under a `[stdout]` or `[stderr]` label, in the order
/// written, then one bracketed line saying how the command ended (and any cut). The same
/// facts go in the structured content.
pub(super) fn render(output: &CommandOutput, timeout: Duration, limit: usize) -> ToolOutput {
    let mut text = String::new();
    for chunk in &output.chunks {
        text.push_str(match chunk.stream {
            OutputStream::Stdout => "[stdout]\n",
            OutputStream::Stderr => "[stderr]\n",
        });
        text.push_str(&chunk.text);
        if !chunk.text.ends_with('\n') {
            text.push('\n');
        }
    }
    if output.chunks.is_empty() {
        text.push_str("[no output]\n");
    }
    let stopped = "the command and every process it started were stopped";
    let status = match output.end {
        CommandEnd::Exited { code } => format!("[exit code {code}]"),
        CommandEnd::Signaled { signal } => format!("[ended by signal {signal}]"),
        CommandEnd::TimedOut => format!("[timed out after {}: {stopped}]", seconds(timeout)),
        CommandEnd::OutputLimit => format!(
            "[output cut at {limit} bytes: {stopped}; redirect long output to a file and read parts of it]"
        ),
    };
    text.push_str(&status);
    if output.truncated && output.end != CommandEnd::OutputLimit {
        text.push_str(&format!("\n[output cut at {limit} bytes]"));
    }
    let (exit_code, signal) = match output.end {
        CommandEnd::Exited { code } => (Some(code), None),
        CommandEnd::Signaled { signal } => (None, Some(signal)),
        _ => (None, None),
    };
    let structured = json!({
        "exit_code": exit_code,
        "signal": signal,
        "timed_out": output.end == CommandEnd::TimedOut,
        "output_limit_reached": output.end == CommandEnd::OutputLimit,
        "truncated": output.truncated,
        "stdout": output.stream(OutputStream::Stdout),
        "stderr": output.stream(OutputStream::Stderr),
        "elapsed_ms": u64::try_from(output.elapsed.as_millis()).unwrap_or(u64::MAX),
    });
    ToolOutput { content: text, structured_content: Some(structured), parts: Parts::new() }
}

/// `5 s`, `0.5 s`.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 { format!("{s:.0} s") } else { format!("{s} s") }
}

#[cfg(test)]
mod tests {
    use harnessx_core::OutputChunk;

    use super::*;

    fn output(chunks: &[(OutputStream, &str)], end: CommandEnd, truncated: bool) -> CommandOutput {
        CommandOutput {
            chunks: chunks.iter().map(|(s, t)| OutputChunk { stream: *s, text: (*t).to_owned() }).collect(),
            end,
            truncated,
            elapsed: Duration::from_millis(3),
        }
    }

    #[test]
    fn stretches_are_labelled_in_order_and_the_end_is_said() {
        let out = output(
            &[(OutputStream::Stdout, "a\n"), (OutputStream::Stderr, "warn"), (OutputStream::Stdout, "b\n")],
            CommandEnd::Exited { code: 2 },
            false,
        );
        let rendered = render(&out, Duration::from_secs(5), 100);
        assert_eq!(rendered.content, "[stdout]\na\n[stderr]\nwarn\n[stdout]\nb\n[exit code 2]");
        let s = rendered.structured_content.unwrap();
        assert_eq!(s["exit_code"], 2);
        assert_eq!(s["stdout"], "a\nb\n");
        assert_eq!(s["stderr"], "warn");
    }

    #[test]
    fn timeouts_and_cuts_say_what_was_stopped() {
        let rendered = render(&output(&[], CommandEnd::TimedOut, false), Duration::from_millis(500), 10);
        assert_eq!(
            rendered.content,
            "[no output]\n[timed out after 0.5 s: the command and every process it started were stopped]"
        );
        let rendered = render(
            &output(&[(OutputStream::Stdout, "y\ny\n")], CommandEnd::OutputLimit, true),
            Duration::ZERO,
            4,
        );
        assert!(rendered.content.ends_with("[output cut at 4 bytes: the command and every process it started were stopped; redirect long output to a file and read parts of it]"), "{}", rendered.content);
        assert_eq!(rendered.structured_content.unwrap()["output_limit_reached"], true);
    }

    #[test]
    fn the_command_stops_before_the_tool_does() {
        assert_eq!(command_timeout(None), Duration::from_secs(299));
        assert_eq!(command_timeout(Some(5.0)), Duration::from_secs(5));
        assert_eq!(command_timeout(Some(300.0)), Duration::from_secs(299));
    }
}
