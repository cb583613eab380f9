//! The `harnessx` command: run an agent, list, inspect and call tools.
//!
//! Exit status: 0 for a result, 1 for an error result (or a failed run), 2 for a usage
//! error, 3 when a durable run stopped to wait for input ([`report::NEEDS_INPUT`]), 4
//! when a run stopped at a limit ([`report::LIMIT_REACHED`]), 74 when the output cannot
//! be written ([`error::EX_IOERR`]).
//!
//! The commands ([`cmd`]) are put together from the one set-up of tools and agents
//! ([`setup`]), the one place durable runs live behind ([`backend`]), and the one run
//! report ([`report`]).

#[macro_use]
mod output;

mod backend;
mod cmd;
mod error;
mod report;
mod setup;
mod shutdown;
mod terminal;
mod text;
mod trace;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::cmd::{durable, mcp, run, runs, tools, worker};
use crate::error::CliError;

const EXIT_STATUS: &str = "Exit status: 0 done; 1 failed (an error result, a failed run, a journal error); 2 usage error; 3 a durable run waits for input (`harnessx approve` or `harnessx answer`, then `harnessx resume`); 4 the run stopped at a limit (--max-turns, --max-tool-calls, --max-tokens, --max-cost-usd; a durable run resumes with a higher one); 74 the output cannot be written.";

/// Safe, fast and predictable tools for LLM agents.
#[derive(Debug, Parser)]
#[command(name = "harnessx", version, about, after_help = EXIT_STATUS)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Export the spans of runs and tool calls: `otlp` (to the collector the
    /// OTEL_EXPORTER_OTLP_* variables name; default http://localhost:4318) or a FILE of
    /// JSON lines, one per span. Contents are left out unless
    /// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
    #[arg(long, global = true, value_name = "otlp|FILE", value_parser = trace::parse_target)]
    trace: Option<harnessx::telemetry::TraceTarget>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List, inspect and call built-in tools.
    Tools {
        #[command(subcommand)]
        command: tools::ToolsCommand,
    },
    /// Run an agent on a prompt (with --durable FILE: journaled, resumable).
    #[command(after_help = EXIT_STATUS)]
    Run(run::RunArgs),
    /// Continue a durable run from its journal (after a pause, a crash or a failure).
    ///
    /// Give the same --tools, --model and other agent flags as the run, from the same
    /// directory: the agent is built from them again. A run started with other tools or
    /// another model is refused (exit status 1). With --restate URL, the run goes on by
    /// itself on the cluster's workers; this follows it until it finishes or waits.
    #[command(after_help = EXIT_STATUS)]
    Resume(durable::ResumeArgs),
    /// Decide on a call a paused durable run waits to have approved; then `resume` it
    /// (a run on a Restate cluster goes on by itself).
    Approve(durable::ApproveArgs),
    /// Say whether a call whose outcome is unknown took effect; then `resume` the run.
    ///
    /// The text becomes the call's result for the model; the call is not run again.
    Answer(durable::AnswerArgs),
    /// Serve the agent to a Restate cluster, so that its runs (`run --restate URL`)
    /// execute here, and move to another worker if this one dies.
    ///
    /// Every worker of a cluster must be started with the same --tools, --model and
    /// other agent flags: a run started with other tools is refused by this worker, and
    /// waits for one that has them.
    Worker(worker::WorkerArgs),
    /// Serve built-in tools over MCP (`mcp serve`).
    Mcp {
        #[command(subcommand)]
        command: mcp::McpCommand,
    },
    /// List and inspect the runs in a journal.
    Runs {
        #[command(subcommand)]
        command: runs::RunsCommand,
    },
}

fn main() -> ExitCode {
    harnessx::builtin::link();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            errln!("harnessx: could not start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Before any span; flushed before the runtime goes, so a short command loses none.
    let telemetry = match cli.trace.map(trace::start).transpose() {
        Ok(guard) => guard,
        Err(CliError::Usage(message) | CliError::Failed(message)) => {
            errln!("harnessx: {message}");
            return ExitCode::from(2);
        }
        Err(e @ CliError::Output(_)) => return exit(e),
    };
    let outcome = runtime.block_on(async {
        match cli.command {
            Command::Tools { command } => tools::run(command).await,
            Command::Run(args) => run::run(args).await,
            Command::Resume(args) => durable::resume(args).await,
            Command::Approve(args) => durable::approve(args).await,
            Command::Answer(args) => durable::answer(args).await,
            Command::Worker(args) => worker::worker(args).await,
            Command::Mcp { command } => mcp::run(command).await,
            Command::Runs { command } => runs::run(command),
        }
    });
    if let Some(guard) = telemetry {
        trace::finish(guard);
    }
    // A task still blocked on standard input (`mcp serve` stopped by a signal while its
    // client keeps stdin open) would hold a plain drop of the runtime forever.
    runtime.shutdown_timeout(std::time::Duration::from_millis(250));
    outcome.unwrap_or_else(exit)
}

/// Says why the command could not give a result, on standard error, and gives the exit
/// status of that kind of error.
fn exit(e: CliError) -> ExitCode {
    match e {
        CliError::Usage(message) => {
            errln!("harnessx: {message}");
            ExitCode::from(2)
        }
        CliError::Failed(message) => {
            errln!("harnessx: {message}");
            ExitCode::FAILURE
        }
        CliError::Output(e) => {
            // Standard error may fail the same way; the status says it anyway.
            let line = output::write_error_line(&e);
            let _ = output::write_out(std::io::stderr(), format_args!("{line}\n"));
            ExitCode::from(error::EX_IOERR)
        }
    }
}
