//! `harnessx runs list | show ID --durable FILE`: what a journal holds; `runs fork` is
//! [`fork`](super::fork)'s. (A Restate cluster keeps its runs' journals itself: with
//! `--restate URL` each says so.)

use std::process::ExitCode;

use clap::Subcommand;
use harnessx::agent::model::ModelResponse;
use harnessx::durable::{Entry, JournalEntry, RunRecord, RunReport};
use harnessx::time::UtcDateTime;
use serde_json::json;

use super::fork::{self, ForkArgs};
use crate::backend::place::Place;
use crate::error::CliError;
use crate::report::awaited;
use crate::text::one_line;

#[derive(Debug, Subcommand)]
pub(crate) enum RunsCommand {
    /// One line per run, newest first: id, status, last change (UTC), prompt.
    List {
        #[command(flatten)]
        place: Place,
        /// Print the run headers as one JSON array.
        #[arg(long)]
        json: bool,
    },
    /// A run: its status, answer, what it waits for, and its journal, one entry per line.
    Show {
        /// The run's id.
        run_id: String,
        #[command(flatten)]
        place: Place,
        /// Print `{"report": RunReport, "entries": [...]}` as one JSON object (a fork's
        /// report has `"forked_from": {"run_id", "turn"}`).
        #[arg(long)]
        json: bool,
    },
    /// Start a new durable run from a run's journaled turns before --at TURN, asked anew
    /// from TURN by the agent the flags make (another --model, --system, tools...).
    ///
    /// The copied turns' calls are never run again, whatever their tool's replay policy:
    /// their results are copied from the journal. The new run lives in the same journal,
    /// records where it came from (`runs show` says so), and is printed as `run
    /// --durable` prints its run; resume it with the flags given here. Configuration
    /// files apply as for `run`.
    #[command(after_help = crate::EXIT_STATUS)]
    Fork(Box<ForkArgs>),
}

pub(crate) async fn run(command: RunsCommand) -> Result<ExitCode, CliError> {
    match command {
        RunsCommand::Fork(args) => return fork::fork(*args).await,
        RunsCommand::List { place, json } => {
            let runs = place.journal("list")?.journal().list_runs().map_err(CliError::failed)?;
            if json {
                outln!("{}", serde_json::to_string(&runs).map_err(CliError::failed)?);
            } else {
                for run in &runs {
                    outln!("{}", list_line(run));
                }
            }
        }
        RunsCommand::Show { run_id, place, json } => {
            let runtime = place.journal("show")?;
            let report = runtime.status(&run_id).map_err(CliError::failed)?;
            let entries = match runtime.journal().load_run(&run_id).map_err(CliError::failed)? {
                Some((_, entries)) => entries,
                None => Vec::new(), // removed since `status` read it
            };
            if json {
                let mut shown = json!({"report": report, "entries": entries});
                summarize_media(&mut shown);
                outln!("{shown}");
            } else {
                print_report(&report, &entries);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Media in a JSON document as what `--json` events show of them: each part's base64
/// `data` replaced by its size in `bytes` (a journal's media are megabytes of base64
/// nobody reads in a report).
fn summarize_media(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Array(items) => items.iter_mut().for_each(summarize_media),
        Value::Object(object) => {
            let medium =
                matches!(object.get("type").and_then(Value::as_str), Some("image" | "file" | "audio"))
                    && object.contains_key("media_type");
            if medium && let Some(Value::String(data)) = object.get("data") {
                let padding = data.bytes().rev().take_while(|&b| b == b'=').count();
                let bytes = (data.len() / 4 * 3).saturating_sub(padding);
                object.remove("data");
                object.insert("bytes".into(), bytes.into());
                return;
            }
            object.values_mut().for_each(summarize_media);
        }
        _ => {}
    }
}

fn list_line(run: &RunRecord) -> String {
    format!(
        "{}  {:<11}  {}  {}",
        run.run_id,
        run.status.as_str(),
        utc(run.updated_at_ms),
        one_line(&run.prompt, 60)
    )
}

fn print_report(report: &RunReport, entries: &[JournalEntry]) {
    let run = &report.run;
    outln!("run {}", run.run_id);
    if let Some(origin) = &report.forked_from {
        outln!("forked from {} at turn {}", origin.run_id, origin.turn);
    }
    outln!("status: {}", run.status.as_str());
    outln!("prompt: {}", one_line(&run.prompt, 200));
    if !run.prompt_parts.is_empty() {
        let attached: Vec<String> = run.prompt_parts.iter().map(|p| p.label()).collect();
        outln!("attached: {}", attached.join(", "));
    }
    outln!("created: {}  updated: {}", utc(run.created_at_ms), utc(run.updated_at_ms));
    outln!("turns: {}  calls with a result: {}", report.state.turns, report.calls);
    if let Some(limit) = report.state.limit {
        outln!("stopped at its {limit} limit ({})", crate::report::limit_flag(limit));
    }
    if report.state.blocked.is_some() {
        outln!("{}", crate::report::blocked_line(report.state.blocked.as_ref()));
    }
    outln!("{}", crate::report::usage_line(&report.state.usage));
    if let Some(output) = &run.output {
        outln!("output:\n{output}");
    }
    for n in &report.state.needs_input {
        outln!("waiting for {}", awaited(n));
        outln!("  {}", n.reason);
    }
    outln!("entries:");
    for e in entries {
        let (kind, summary) = summary(&e.entry);
        outln!("{:>4} {kind:<14} {summary}", e.seq);
    }
}

/// An entry's kind and what it says, on one line.
fn summary(entry: &Entry) -> (&'static str, String) {
    match entry {
        Entry::ModelResponse { turn, response } => {
            let said = match serde_json::from_value::<ModelResponse>(response.clone()) {
                Ok(r) => {
                    // A fallback model's response names the model that answered.
                    let by = r.model.as_deref().map(|m| format!(" (by {m})")).unwrap_or_default();
                    if r.tool_calls.is_empty() {
                        format!("text: {}{by}", one_line(&r.content, 80))
                    } else {
                        let names: Vec<&str> = r.tool_calls.iter().map(|c| c.name.as_str()).collect();
                        format!("calls {}{by}", names.join(", "))
                    }
                }
                Err(_) => "(unreadable)".to_owned(),
            };
            ("model_response", format!("turn {turn}: {said}"))
        }
        Entry::ContextOverflow { turn, message, .. } => {
            ("context_overflow", format!("turn {turn}: {}", one_line(message, 80)))
        }
        Entry::Compaction { turn, response, .. } => {
            let said = match serde_json::from_value::<ModelResponse>(response.clone()) {
                Ok(r) => one_line(&r.content, 80),
                Err(_) => "(unreadable)".to_owned(),
            };
            ("compaction", format!("turn {turn}: summary: {said}"))
        }
        Entry::CallStart { turn, call_id, tool, replay, .. } => {
            ("call_start", format!("turn {turn}: {call_id} {tool} ({replay})"))
        }
        Entry::CallResult { turn, result, timed_out, .. } => {
            let mark = if *timed_out {
                "timed out"
            } else if result.is_error {
                "error"
            } else {
                "ok"
            };
            (
                "call_result",
                format!(
                    "turn {turn}: {} {} {mark}: {}",
                    result.call_id,
                    result.name,
                    one_line(&result.content, 80)
                ),
            )
        }
        Entry::Approval { call_id, tool, decision, .. } => {
            // Its serialised name (`approve`, `approve_for_session`, `deny`), as in --json.
            let decision = serde_json::to_value(decision).ok();
            let decision = decision.as_ref().and_then(|d| d.as_str()).unwrap_or("?");
            ("approval", format!("{call_id} {tool}: {decision}"))
        }
        Entry::Hook { call_id, outcome, .. } => {
            // Its serialised decision (`allow`, `deny`, `rewrite`, ...), and the hook.
            let decision = serde_json::to_value(&outcome.decision).ok();
            let decision = decision.as_ref().and_then(|d| d["decision"].as_str()).unwrap_or("?");
            let by = outcome.by.as_deref().unwrap_or("?");
            let rewritten = if outcome.rewritten.is_some() { " (rewritten)" } else { "" };
            ("hook", format!("{call_id} {by}: {decision}{rewritten}"))
        }
        Entry::PromptHook { outcome } => {
            let decided: Vec<String> = outcome.decisions().map(|(by, d)| format!("{by}: {d}")).collect();
            ("hook", format!("prompt {}", if decided.is_empty() { "-".into() } else { decided.join(", ") }))
        }
        Entry::ResponseHook { turn, outcome } => {
            let decided = outcome.stopped.as_ref().map_or("-".into(), |b| format!("{}: stop", b.hook));
            ("hook", format!("response {turn} {decided}"))
        }
        Entry::Blocked { hook, message } => ("blocked", format!("{hook}: {message}")),
        Entry::Output { output } => (
            "output",
            format!(
                "{} mode, {} retries: {}",
                output.mode,
                output.retries,
                one_line(&output.schema.to_string(), 80)
            ),
        ),
        Entry::Paused { needs_input } => {
            let waiting: Vec<String> =
                serde_json::from_value::<Vec<harnessx::agent::NeedsInput>>(needs_input.clone())
                    .map(|needs| {
                        needs.iter().map(|n| format!("{} of {}", n.kind.as_str(), n.call_id)).collect()
                    })
                    .unwrap_or_default();
            ("paused", format!("waiting for {}", waiting.join(", ")))
        }
        Entry::Answer { call_id, text } => ("answer", format!("{call_id}: {}", one_line(text, 80))),
        Entry::LimitReached { limit, usage } => {
            ("limit_reached", format!("the {limit} limit; {}", crate::report::usage_line(usage)))
        }
        Entry::Final { output } => ("final", one_line(output, 80)),
        Entry::Failed { error } => ("failed", one_line(error, 80)),
        Entry::Continues { run_id } => ("continues", format!("the conversation of run {run_id}")),
        Entry::Forked { run_id, turn } => ("forked", format!("from run {run_id} at turn {turn}")),
        Entry::Limits { limits, price } => ("limits", limits_summary(limits, price.as_ref())),
    }
}

/// A run's own limits and price as `runs show` prints them: the flags that give them.
fn limits_summary(
    limits: &harnessx::agent::RunLimits,
    price: Option<&harnessx::agent::ModelPrice>,
) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(n) = limits.max_turns {
        parts.push(format!("--max-turns {n}"));
    }
    if let Some(n) = limits.max_tool_calls {
        parts.push(format!("--max-tool-calls {n}"));
    }
    if let Some(n) = limits.max_tokens {
        parts.push(format!("--max-tokens {n}"));
    }
    if let Some(usd) = limits.max_cost_usd {
        parts.push(format!("--max-cost-usd {usd}"));
    }
    for (tool, n) in &limits.max_calls_per_tool {
        parts.push(format!("{tool} at most {n} calls"));
    }
    if let Some(p) = price {
        parts.push(format!("--price {},{},{}", p.input, p.output, p.cached_input));
    }
    parts.join(" ")
}

/// Milliseconds since the Unix epoch as `YYYY-MM-DD HH:MM:SSZ` (UTC).
fn utc(ms: u64) -> String {
    let t = UtcDateTime::from_unix_ms(ms);
    format!("{:04}-{:02}-{:02} {:02}:{:02}:{:02}Z", t.year, t.month, t.day, t.hour, t.minute, t.second)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(utc(0), "1970-01-01 00:00:00Z");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00Z");
        assert_eq!(utc(1_798_761_599_999), "2026-12-31 23:59:59Z");
        assert_eq!(utc(4_107_542_400_000), "2100-03-01 00:00:00Z");
    }
}
