#![doc = include_str!("../README.md")]
// Exit status: 0 for a result, 1 for an error result (or a failed run), 2 for a usage
// error, 3 when a durable run stopped to wait for input (`report::NEEDS_INPUT`), 4 when a
// run stopped at a limit (`report::LIMIT_REACHED`), 74 when the output cannot be written
// (`error::EX_IOERR`).
//
// The commands (`cmd`) are put together from the one set-up of tools and agents
// (`setup`), the one place durable runs live behind (`backend`), and the one run report
// (`report`).

#[macro_use]
mod output;

mod backend;
mod cmd;
mod config;
mod elicit;
mod error;
mod hooks;
mod report;
mod setup;
mod shutdown;
mod terminal;
mod text;
mod trace;

use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::cmd::{chat, config as config_cmd, durable, eval, mcp, run, runs, serve, tools, worker};
use crate::error::CliError;

pub(crate) const EXIT_STATUS: &str = "Exit status: 0 done; 1 failed (an error result, a failed run, a journal error); 2 usage error; 3 a durable run waits for input (`harnessx approve` or `harnessx answer`, then `harnessx resume`); 4 the run stopped at a limit (--max-turns, --max-tool-calls, --max-tokens, --max-cost-usd; a durable run resumes with a higher one); 74 the output cannot be written.";

const EVAL_EXIT_STATUS: &str = "Exit status: 0 every case passed; 1 a case failed; 2 a bad case file (its line and field named) or usage error; 74 the output cannot be written.";

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
    /// Talk to an agent: each line you type is a prompt that continues the conversation.
    ///
    /// The conversation is journaled (--durable FILE), so it survives a crash and goes on
    /// later with --session ID. Ctrl-C stops the current turn; Ctrl-D (or Ctrl-C at the
    /// prompt) ends the session. The agent flags and configuration files apply as for `run`.
    #[command(after_help = EXIT_STATUS)]
    Chat(chat::ChatArgs),
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
    /// Serve the agent's durable runs over HTTP: start runs, stream their events, approve
    /// their calls, from a program or the web page at the address it prints.
    ///
    /// Runs are journaled in --durable FILE; a server stopped or killed mid-run goes on
    /// with them when it starts again. Listening beyond loopback needs --token. The agent
    /// flags and configuration files apply as for `run`.
    Serve(serve::ServeArgs),
    /// Serve built-in tools over MCP (`mcp serve`).
    Mcp {
        #[command(subcommand)]
        command: mcp::McpCommand,
    },
    /// Run the cases of an eval file (TOML), each in a fresh folder, and check what each
    /// run shows: its answer, the tools it called, its cost; a table (or --json lines) of
    /// what passed, and with --report an HTML page of the transcripts.
    ///
    /// With --record DIR the model's exchanges are kept as cassettes; with --replay DIR
    /// the cases run from them with no network. The agent flags and configuration files
    /// apply as for `run`; a case's `tools` and `system` replace --tools and --system.
    #[command(after_help = EVAL_EXIT_STATUS)]
    Eval(eval::EvalArgs),
    /// List, inspect and fork the runs in a journal.
    Runs {
        #[command(subcommand)]
        command: runs::RunsCommand,
    },
    /// Show the configuration: harnessx.toml (in this folder or above) and
    /// ~/.config/harnessx/config.toml, merged under the command line.
    Config {
        #[command(subcommand)]
        command: config_cmd::ConfigCommand,
    },
}

fn main() -> ExitCode {
    harnessx::builtin::link();
    let matches = Cli::command().get_matches();
    let mut cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    // The configuration files, under the command line, for the commands that build an agent.
    let applied = match configure(&mut cli.command, &matches) {
        Ok(applied) => applied,
        Err(e) => return exit(e),
    };
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
            Command::Eval(args) => eval::eval(args).await,
            Command::Chat(args) => chat::chat(args).await,
            Command::Config { command: config_cmd::ConfigCommand::Show(args) } => {
                config_cmd::show(&args, &applied.unwrap_or_default())
            }
            Command::Resume(args) => durable::resume(args).await,
            Command::Approve(args) => durable::approve(args).await,
            Command::Answer(args) => durable::answer(args).await,
            Command::Worker(args) => worker::worker(args).await,
            Command::Serve(args) => serve::serve(args).await,
            Command::Mcp { command } => mcp::run(command).await,
            Command::Runs { command } => runs::run(command).await,
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

/// Merges the configuration files into the agent flags of `command` (`run`, `chat`,
/// `resume` of a journal's run, `runs fork`, `worker`, `config show`), and their hooks into the hook
/// flags of `tools call` and `mcp serve`; other commands read no file. Returns what was
/// merged, from where.
fn configure(command: &mut Command, matches: &ArgMatches) -> Result<Option<config::Applied>, CliError> {
    let hooks = match &mut *command {
        Command::Tools { command: tools::ToolsCommand::Call { hooks, .. } } => Some(hooks),
        Command::Mcp { command: mcp::McpCommand::Serve(args) } => Some(&mut args.hooks),
        _ => None,
    };
    if let Some(hooks) = hooks {
        config::apply_hooks(hooks, &config::load()?)?;
        return Ok(None);
    }
    let (agent, sub) = match (command, matches.subcommand()) {
        (Command::Run(args), Some((_, sub))) => (&mut args.agent, sub),
        (Command::Chat(args), Some((_, sub))) => (&mut args.agent, sub),
        (Command::Eval(args), Some((_, sub))) => (&mut args.agent, sub),
        (Command::Resume(args), Some((_, sub))) if !args.place.is_cluster() => (&mut args.agent, sub),
        (Command::Runs { command: runs::RunsCommand::Fork(args) }, Some((_, runs))) => {
            match runs.subcommand() {
                Some((_, sub)) if !args.place.is_cluster() => (&mut args.agent, sub),
                _ => return Ok(None),
            }
        }
        (Command::Worker(args), Some((_, sub))) => (&mut args.agent, sub),
        (Command::Serve(args), Some((_, sub))) => (&mut args.agent, sub),
        (Command::Config { command: config_cmd::ConfigCommand::Show(args) }, Some((_, config))) => {
            match config.subcommand() {
                Some((_, sub)) => (&mut args.agent, sub),
                None => return Ok(None),
            }
        }
        _ => return Ok(None),
    };
    let files = config::load()?;
    let given = |id: &str| sub.value_source(id) == Some(ValueSource::CommandLine);
    config::apply(agent, &files, &given).map(Some)
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
