//! The run report, written once: where a durable run stands when `run`, `resume` or
//! a follow of a Restate run stops (completed, failed, waiting for input, at a limit,
//! still running), as text or as the `--json` object `{"run_id", "status", "output",
//! "needs_input"}` (with `"limit"` and `"usage"` at a limit), and the exit status it
//! maps to. The commands that continue a run are
//! printed for where it lives ([`Next`]).

use std::path::PathBuf;
use std::process::ExitCode;

use harnessx::agent::model::Usage;
use harnessx::agent::{Limit, NeedsInput, NeedsInputKind, RunState, RunStatus};
use serde_json::json;

use crate::text::{one_line, shell_word};

/// The exit status of a run that stopped to wait for input.
pub(crate) const NEEDS_INPUT: u8 = 3;

/// The exit status of a run that stopped at a limit.
pub(crate) const LIMIT_REACHED: u8 = 4;

/// The exit status of a run a hook ended (a blocked prompt, a stopped response).
pub(crate) const BLOCKED: u8 = 5;

/// The exit status of a run in `status`: 0 completed, 1 failed (or still running),
/// [`NEEDS_INPUT`] waiting, [`LIMIT_REACHED`] at a limit, [`BLOCKED`] ended by a hook.
pub(crate) fn exit_status(status: RunStatus) -> ExitCode {
    match status {
        RunStatus::Completed => ExitCode::SUCCESS,
        RunStatus::NeedsInput => ExitCode::from(NEEDS_INPUT),
        RunStatus::LimitReached => ExitCode::from(LIMIT_REACHED),
        RunStatus::Blocked => ExitCode::from(BLOCKED),
        RunStatus::Failed | RunStatus::Running => ExitCode::FAILURE,
    }
}

/// The one line that says a hook ended a run: `run blocked by hook HOOK: MESSAGE`.
pub(crate) fn blocked_line(blocked: Option<&harnessx::hooks::Blocked>) -> String {
    match blocked {
        Some(b) => format!("run blocked by hook {}: {}", one_line(&b.hook, 60), one_line(&b.message, 300)),
        None => "run blocked by a hook".into(),
    }
}

/// The flag that sets `limit`.
pub(crate) fn limit_flag(limit: Limit) -> &'static str {
    match limit {
        Limit::Turns => "--max-turns",
        Limit::ToolCalls => "--max-tool-calls",
        Limit::Tokens => "--max-tokens",
        Limit::Cost => "--max-cost-usd",
        // A limit added later: the guide names its flag.
        _ => "the limit's flag",
    }
}

/// What a run used, on one line: `usage: 1200 input tokens (800 cached), 300 output
/// tokens, 2 requests, 3 tool calls, $0.004200`.
pub(crate) fn usage_line(usage: &Usage) -> String {
    let mut input = format!("{} input tokens ({} cached", usage.input_tokens, usage.cached_input_tokens);
    if usage.cache_write_tokens > 0 {
        input.push_str(&format!(", {} written to the cache", usage.cache_write_tokens));
    }
    input.push(')');
    let mut output = format!("{} output tokens", usage.output_tokens);
    if usage.reasoning_tokens > 0 {
        output.push_str(&format!(" ({} reasoning)", usage.reasoning_tokens));
    }
    let mut line = format!(
        "usage: {input}, {output}, {} request{}, {} tool call{}",
        usage.requests,
        if usage.requests == 1 { "" } else { "s" },
        usage.tool_calls,
        if usage.tool_calls == 1 { "" } else { "s" },
    );
    if let Some(cost) = usage.cost_usd {
        line.push_str(&format!(", ${cost:.6}"));
    }
    line
}

/// `usage` as `--json` gives it: `input_tokens`, `output_tokens`, `cached_input_tokens`,
/// `cache_write_tokens`, `reasoning_tokens`, `requests`, `tool_calls`, and `cost_usd`
/// when the price is known.
pub(crate) fn usage_json(usage: &Usage) -> serde_json::Value {
    serde_json::to_value(usage).unwrap_or_default()
}

/// Where a run lives, as the printed commands that continue it name it.
#[derive(Debug, Clone)]
pub(crate) enum Next {
    /// A journal (`--durable FILE`): a run goes on when `harnessx resume` drives it, with
    /// the run's agent flags (`flags`, when this process knows them).
    Journal { journal: PathBuf, flags: Vec<String> },
    /// A Restate cluster (`--restate URL`): a run goes on by itself once answered.
    Cluster { ingress: String },
}

impl Next {
    /// `--durable FILE` or `--restate URL`, as shell words.
    fn place(&self) -> String {
        match self {
            Self::Journal { journal, .. } => {
                format!("--durable {}", shell_word(&journal.display().to_string()))
            }
            Self::Cluster { ingress } => format!("--restate {}", shell_word(ingress)),
        }
    }

    /// `harnessx resume ID --durable FILE` with the run's flags.
    fn resume_command(&self, run_id: &str) -> String {
        let mut words = vec!["harnessx".to_owned(), "resume".into(), shell_word(run_id), self.place()];
        if let Self::Journal { flags, .. } = self {
            words.extend(flags.iter().map(|f| shell_word(f)));
        }
        words.join(" ")
    }
}

/// Prints where the run stands (`--json`: one object on stdout; else the answer on
/// stdout, anything else on stderr with the commands that continue the run) and gives
/// its exit status.
pub(crate) fn print(state: &RunState, next: &Next, json: bool) -> ExitCode {
    if json {
        // A typed run's answer is a JSON value.
        let output = match (&state.value, state.status) {
            (Some(value), RunStatus::Completed) => value.clone(),
            _ => json!(state.outcome()),
        };
        let mut object = json!({
            "run_id": state.run_id,
            "status": state.status,
            "output": output,
            "needs_input": state.needs_input,
        });
        // At a limit, which one and what the run used (the other shapes stay as they
        // were: `runs show --json` has the usage of any run).
        if let Some(limit) = state.limit {
            object["limit"] = json!(limit);
            object["usage"] = usage_json(&state.usage);
        }
        // Ended by a hook: which, and why (`output` is its message).
        if let Some(blocked) = &state.blocked {
            object["blocked"] = json!(blocked);
        }
        outln!("{object}");
    } else {
        print_text(state, next);
    }
    exit_status(state.status)
}

fn print_text(state: &RunState, next: &Next) {
    let run_id = state.run_id.as_deref().unwrap_or_default();
    let run = shell_word(run_id);
    let output = state.outcome().unwrap_or("");
    match (state.status, next) {
        // A typed run's answer: one line of JSON.
        (RunStatus::Completed, _) => {
            match &state.value {
                Some(value) => outln!("{value}"),
                None => outln!("{output}"),
            }
            // A cluster does not report a completed run's usage.
            if state.usage.requests > 0 {
                errln!("harnessx: {}", usage_line(&state.usage));
            }
        }
        (RunStatus::LimitReached, _) => {
            let limit = state.limit.unwrap_or(Limit::Turns);
            let flag = limit_flag(limit);
            errln!(
                "harnessx: run {run_id} stopped at its {limit} limit ({flag}); {}",
                usage_line(&state.usage)
            );
            match next {
                Next::Journal { .. } => {
                    errln!("harnessx: resume it with a higher {flag}: {}", next.resume_command(run_id))
                }
                Next::Cluster { .. } => {
                    errln!(
                        "harnessx: raise it (it then goes on by itself): {} {flag} N",
                        next.resume_command(run_id)
                    )
                }
            }
        }
        (RunStatus::Blocked, _) => errln!("harnessx: {}", blocked_line(state.blocked.as_ref())),
        (RunStatus::Failed, Next::Journal { .. }) => {
            errln!("harnessx: the run failed: {output}");
            errln!("harnessx: resume it with: {}", next.resume_command(run_id));
        }
        (RunStatus::Failed, Next::Cluster { .. }) => errln!("harnessx: the run failed: {output}"),
        (RunStatus::Running, Next::Journal { .. }) => {
            errln!(
                "harnessx: run {run_id} stopped while running; resume it with: {}",
                next.resume_command(run_id)
            );
        }
        (RunStatus::Running, Next::Cluster { .. }) => errln!("harnessx: run {run} is still running"),
        (RunStatus::NeedsInput, _) => {
            match next {
                Next::Journal { .. } => errln!("harnessx: run {run_id} is waiting for input:"),
                Next::Cluster { .. } => errln!("harnessx: run {run} is waiting for input:"),
            }
            for n in &state.needs_input {
                errln!("  {}", awaited(n));
                errln!("    {}", n.reason);
            }
            match next {
                Next::Journal { .. } => errln!("Then continue it:"),
                Next::Cluster { .. } => errln!(
                    "Answer it (it then goes on by itself; `{}` follows it):",
                    next.resume_command(run_id)
                ),
            }
            let place = next.place();
            for n in &state.needs_input {
                let call = shell_word(&n.call_id);
                match n.kind {
                    NeedsInputKind::Approval => {
                        errln!("  harnessx approve {run} {call} {place} [--decision approve|session|deny]")
                    }
                    NeedsInputKind::Outcome => {
                        errln!("  harnessx answer {run} {call} 'WHAT HAPPENED' {place}")
                    }
                    NeedsInputKind::Question => {
                        errln!("  harnessx answer {run} {call} 'YOUR REPLY' {place}")
                    }
                    NeedsInputKind::Elicitation => {
                        errln!("  harnessx answer {run} {call} '{{\"FIELD\": ..}}'|decline|cancel {place}")
                    }
                    // The login command is in its reason; then `resume`.
                    NeedsInputKind::Auth => {}
                }
            }
            if let Next::Journal { .. } = next {
                errln!("  {}", next.resume_command(run_id));
            }
        }
    }
}

/// What `approve` or `answer` recorded.
#[derive(Debug, Clone)]
pub(crate) enum Recorded {
    /// A decision on a call that waits for approval, as `--decision` spells it.
    Decision(String),
    /// What happened to a call whose outcome was unknown.
    Answer,
}

/// Says on stderr what `approve` or `answer` recorded for call `call_id` of run
/// `run_id`, and how the run goes on.
pub(crate) fn recorded(what: Recorded, run_id: &str, call_id: &str, next: &Next) {
    let run = shell_word(run_id);
    let place = next.place();
    match next {
        Next::Journal { .. } => {
            let what = match what {
                Recorded::Decision(decision) => decision,
                Recorded::Answer => "the answer".to_owned(),
            };
            errln!(
                "harnessx: recorded {what} for call {call_id} of run {run_id}; continue it with: harnessx resume {run} {place} (and the run's flags)"
            );
        }
        Next::Cluster { .. } => {
            let what = match what {
                Recorded::Decision(_) => "the decision",
                Recorded::Answer => "the answer",
            };
            errln!(
                "harnessx: recorded {what} for call {call_id} of run {run_id}; it goes on by itself. Follow it with: harnessx resume {run} {place}"
            );
        }
    }
}

/// One line: what kind of input, for which call.
pub(crate) fn awaited(n: &NeedsInput) -> String {
    format!("{} of call {}: {} {}", n.kind.as_str(), n.call_id, n.tool, one_line(&n.arguments, 200))
}
