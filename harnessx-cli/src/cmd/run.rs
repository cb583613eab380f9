//! `harnessx run PROMPT`: an agent over a model, with tools, in the terminal; with
//! `--durable FILE` or `--restate URL` the run is durable, on that [`Backend`].

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use futures_util::StreamExt;
use std::sync::Arc;

use harnessx::agent::{AgentEvent, Output, Prompt, RunLimits, RunStatus};
use harnessx::durable::StartOptions;

use crate::backend::{Backend, local, restate};
use crate::error::CliError;
use crate::output::Stdout;
use crate::report;
use crate::setup::attach::AttachArgs;
use crate::setup::flags::AgentArgs;
use crate::setup::output::OutputArgs;
use crate::setup::{self, Approvals, build_agent};
use crate::terminal::Progress;
use crate::text::{new_run_id, one_line};

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// What to ask the agent (or --mcp-prompt).
    #[arg(required_unless_present = "mcp_prompt")]
    prompt: Option<String>,
    /// Take the run's prompt from an MCP server's prompts (`SERVER/NAME`; the name alone
    /// with one server): a configuration file's server by its NAME, the N-th server of
    /// the command line `mcpN`. `harnessx mcp prompts` lists them.
    #[arg(long, value_name = "[SERVER/]NAME", conflicts_with = "prompt")]
    mcp_prompt: Option<String>,
    /// An argument of --mcp-prompt, NAME=VALUE (repeatable).
    #[arg(long = "arg", value_name = "NAME=VALUE", requires = "mcp_prompt")]
    prompt_args: Vec<String>,
    #[command(flatten)]
    pub(crate) agent: AgentArgs,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    attach: AttachArgs,
    /// Print one JSON event per line instead of text (with --durable: one JSON object
    /// with run_id, status, output and needs_input).
    #[arg(long)]
    json: bool,
    /// Make one complete (non-streaming) model request per turn (a durable run always
    /// does).
    #[arg(long)]
    no_stream: bool,
    /// Journal the run in this SQLite file (created if missing; its folder must exist), so
    /// it can be resumed after a crash or a pause: see `harnessx resume`. Without a
    /// terminal and without --yes, a call that asks pauses the run (exit status 3)
    /// instead of being denied.
    #[arg(long, value_name = "FILE")]
    durable: Option<PathBuf>,
    /// Start the run on a Restate cluster, at its ingress URL (e.g. http://127.0.0.1:8080),
    /// and follow it. The cluster's workers (`harnessx worker`) run it with their own
    /// agent; agent flags given here (--tools, --model, ...) only say what they must
    /// have: a run that lands on workers with other tools, model or system prompt fails.
    #[arg(long, value_name = "URL", conflicts_with = "durable")]
    restate: Option<String>,
    /// With --restate: the cluster's admin API, asked why a run is stuck (a worker with
    /// other tools, say) while it follows the run.
    #[arg(long, value_name = "URL", requires = "restate")]
    restate_admin: Option<String>,
    /// The durable run's id (default: run-MILLIS-PID). Needs --durable or --restate.
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
}

pub(crate) async fn run(args: RunArgs) -> Result<ExitCode, CliError> {
    // Read and checked before anything starts: a bad file is a usage error.
    let output = args.output.output()?;
    let prompt = match &args.mcp_prompt {
        Some(spec) => setup::mcp_prompt::prompt(&args.agent.mcp, spec, &args.prompt_args).await?,
        None => Prompt::new(args.prompt.clone().unwrap_or_default()),
    };
    let prompt = prompt.with_parts(args.attach.parts()?);
    if let Some(ingress) = &args.restate {
        // The workers build the agent; the flags only say what it must be.
        let expect = setup::expectation(&args.agent)?;
        let backend = restate::backend(
            ingress,
            args.restate_admin.as_deref(),
            expect,
            args.agent.blob_store.as_deref(),
        )?;
        let run_id = run_id(args.run_id.clone())?;
        return durable(&backend, &run_id, &args, prompt, output).await;
    }
    if args.run_id.is_some() && args.durable.is_none() {
        return Err(CliError::Usage("--run-id needs --durable FILE or --restate URL".into()));
    }
    let approvals = Approvals::here(args.agent.yes);
    if let Some(path) = &args.durable {
        let agent = build_agent(&args.agent, true, approvals).await?;
        let opened = run_id(args.run_id.clone()).and_then(|run_id| Ok((run_id, local::create(path)?)));
        let (run_id, journal) = match opened {
            Ok(opened) => opened,
            Err(e) => {
                agent.close().await;
                return Err(e);
            }
        };
        let backend = local::backend(path, journal, Some(agent), args.agent.to_flags())?;
        return durable(&backend, &run_id, &args, prompt, output).await;
    }
    let agent = build_agent(&args.agent, !args.no_stream, approvals).await?;
    let mut shown = Shown::new(args.json).with_limits(args.agent.run_limits());
    shown.typed = output.is_some();
    let mut events = match output {
        Some(output) => agent.run_stream_with_output(prompt, output),
        None => agent.run_stream(prompt),
    };
    let mut written = Ok(());
    while let Some(event) = events.next().await {
        written = shown.event(event);
        if written.is_err() {
            // No one sees the run any more: stop it.
            break;
        }
    }
    drop(events);
    agent.close().await;
    written?;
    Ok(report::exit_status(shown.ended.unwrap_or(RunStatus::Failed)))
}

/// `--run-id`, or a new one.
pub(crate) fn run_id(given: Option<String>) -> Result<String, CliError> {
    let run_id = given.unwrap_or_else(new_run_id);
    if run_id.trim().is_empty() {
        return Err(CliError::Usage("--run-id must not be empty".into()));
    }
    Ok(run_id)
}

/// A durable run: started with its own limits and price (the flags'; those of the
/// agent on the workers, or of a later `resume`, are for the rest), then reported.
async fn durable(
    backend: &Backend,
    run_id: &str,
    args: &RunArgs,
    prompt: Prompt,
    output: Option<Output>,
) -> Result<ExitCode, CliError> {
    if backend.is_cluster()
        && let Some(output) = &output
    {
        // A typed run on a cluster carries its schema: one the workers cannot use is the
        // command line's fault.
        output.spec(&harnessx::agent::AgentConfig::default()).map_err(CliError::usage)?;
    }
    let options = StartOptions {
        output,
        limits: Some(args.agent.limit_changes()).filter(|l| !l.is_empty()),
        price: args.agent.price,
        progress: progress(args.json),
    };
    let state = backend.start(run_id, prompt, options).await?;
    Ok(report::print(&state, &backend.next(), args.json))
}

/// Where a run followed from outside (on a cluster) says its steps: stderr, unless the
/// output is JSON.
pub(crate) fn progress(json: bool) -> Option<harnessx::durable::Progress> {
    (!json).then(|| -> harnessx::durable::Progress { Arc::new(|event: &str| errln!("  {event}")) })
}

/// The most characters of the model's thinking the text mode shows (on one line).
const THOUGHT_SHOWN: usize = 160;

impl Shown {
    /// Says on stderr how the run ended: the limit it stopped at, if any, and what it used.
    fn said_end(&self, limit: Option<harnessx::agent::Limit>, usage: &harnessx::agent::model::Usage) {
        match limit {
            Some(limit) => errln!(
                "harnessx: the run stopped at {} ({}); {}",
                limit.describe(&self.limits),
                report::limit_flag(limit),
                report::usage_line(usage)
            ),
            None => errln!("harnessx: {}", report::usage_line(usage)),
        }
    }
}

/// What a direct run shows as its events arrive: the answer on stdout as it streams
/// (`--json`: every event, one per line), progress lines on stderr.
#[derive(Debug, Default)]
pub(crate) struct Shown {
    json: bool,
    stdout: Stdout,
    progress: Progress,
    /// The run's limits, to name the one it reaches.
    limits: RunLimits,
    /// Text of this model response is on stdout already.
    printed_text: bool,
    /// The model's thinking so far in this response (text mode: said as one progress
    /// line once it is done, cut to [`THOUGHT_SHOWN`] characters).
    thinking: String,
    /// How the run ended (`None` until it does; an error is `Failed`).
    ended: Option<RunStatus>,
    /// A typed run (`--output-schema`): its text is not shown, its answer is printed as
    /// one line of JSON (`--json`: `run_end`'s `output` is that value).
    pub(crate) typed: bool,
}

impl Shown {
    /// Shows events as text, or (`json`) as JSON lines.
    pub(crate) fn new(json: bool) -> Self {
        Self { json, ..Self::default() }
    }

    /// The run's limits, to name the one a run reaches.
    pub(crate) fn with_limits(self, limits: RunLimits) -> Self {
        Self { limits, ..self }
    }

    /// The run ended with an error.
    pub(crate) fn failed(&self) -> bool {
        self.ended == Some(RunStatus::Failed)
    }

    /// Prints the progress lines held back, and starts the next run afresh.
    pub(crate) fn flush(&mut self) {
        self.progress.flush();
        self.printed_text = false;
        self.ended = None;
    }

    /// Shows one event. A write error on stdout other than a reader that went away ends
    /// the run ([`CliError::Output`], exit status 74).
    pub(crate) fn event(&mut self, event: AgentEvent) -> Result<(), CliError> {
        match &event {
            AgentEvent::Error { .. } => self.ended = Some(RunStatus::Failed),
            AgentEvent::RunEnd { status, limit, usage, .. } => {
                self.ended = Some(*status);
                if self.json {
                    // For the person watching; stdout has it as JSON.
                    self.progress.flush();
                    self.said_end(*limit, usage);
                }
            }
            _ => {}
        }
        if self.json {
            let mut line = serde_json::to_value(&event).map_err(CliError::failed)?;
            // A typed run's `run_end`: `output` is the answer as a JSON value.
            if let Some(object) = line.as_object_mut()
                && let Some(value) = object.remove("value")
            {
                object.insert("output".into(), value);
            }
            return self.stdout.write_now(format_args!("{line}\n"));
        }
        // Text mode: the model's thinking is one progress line on stderr, said when the
        // thinking is done (the next event of any other kind).
        if let AgentEvent::ReasoningDelta { text } = &event {
            if self.thinking.len() < 4 * THOUGHT_SHOWN {
                self.thinking.push_str(text);
            }
            return Ok(());
        }
        if !self.thinking.is_empty() {
            let thought = std::mem::take(&mut self.thinking);
            self.progress.line(format!("∴ thinking: {}", one_line(&thought, THOUGHT_SHOWN)));
        }
        match event {
            // A typed run's text is the model's way to its answer, not the answer.
            AgentEvent::TextDelta { .. } if self.typed => self.printed_text = false,
            AgentEvent::RunEnd { value: Some(value), limit, usage, .. } if self.typed => {
                self.progress.flush();
                self.stdout.write_now(format_args!("{value}\n"))?;
                self.said_end(limit, &usage);
            }
            AgentEvent::TextDelta { text } => {
                self.printed_text = true;
                self.stdout.write_now(format_args!("{text}"))?;
            }
            AgentEvent::ToolCallStart { name, arguments, .. } => {
                self.progress.line(format!("→ {name} {}", one_line(&arguments, 120)));
            }
            AgentEvent::ToolCallEnd { name, is_error, content, .. } => {
                let mark = if is_error { "✗" } else { "✓" };
                self.progress.line(format!("{mark} {name}: {}", one_line(&content, 120)));
            }
            AgentEvent::RunEnd { status: RunStatus::Blocked, blocked, .. } => {
                self.progress.flush();
                if self.printed_text {
                    self.stdout.write_now(format_args!("\n"))?;
                }
                errln!("harnessx: {}", report::blocked_line(blocked.as_ref()));
            }
            AgentEvent::RunEnd { status: RunStatus::LimitReached, limit, usage, .. } => {
                self.progress.flush();
                if self.printed_text {
                    self.stdout.write_now(format_args!("\n"))?;
                }
                self.said_end(limit, &usage);
            }
            AgentEvent::RunEnd { output, limit, usage, .. } => {
                self.progress.flush();
                // Without streaming, the answer arrives whole here.
                if !self.printed_text {
                    self.stdout.write(format_args!("{output}"))?;
                }
                self.stdout.write_now(format_args!("\n"))?;
                self.said_end(limit, &usage);
            }
            AgentEvent::Hook { hook, decision, .. } => {
                self.progress.line(format!("⚑ hook {}: {decision}", one_line(&hook, 60)));
            }
            AgentEvent::ToolProgress { progress, total, message, .. } => {
                let of = total.map(|t| format!("/{t}")).unwrap_or_default();
                let said = message.map(|m| format!(": {}", one_line(&m, 100))).unwrap_or_default();
                self.progress.line(format!("  … {progress}{of}{said}"));
            }
            AgentEvent::ModelFallback { from, to, reason } => {
                self.progress.line(format!("⇢ {from} is down ({reason}); asking {to}"));
            }
            AgentEvent::Compaction { tokens_before, tokens_after } => {
                self.progress.line(format!(
                    "⋯ compacted the history to fit the context window: about {tokens_before} → {tokens_after} tokens"
                ));
            }
            AgentEvent::ModelRequest { .. } => self.printed_text = false,
            AgentEvent::Error { message } => {
                self.progress.flush();
                errln!("harnessx: the run failed: {message}");
            }
            _ => {}
        }
        Ok(())
    }
}
