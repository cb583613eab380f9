//! `harnessx run PROMPT`: an agent over a model, with tools, in the terminal.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use futures_util::StreamExt;
use harnessx::agent::{Agent, AgentConfig, AgentEvent};
use harnessx::model::{AnthropicModel, Model, OpenAiModel, TestModel};
use harnessx::{PermissionLevel, ToolRegistry};

use crate::CliError;
use crate::approve;
use crate::setup::{BasePath, PermissionArgs, SandboxArgs, WebArgs, load_tools};

/// Said on stderr when `run` uses the built-in test model, so nobody mistakes its canned
/// answers for a real model's.
pub(crate) const TEST_MODEL_NOTICE: &str = "harnessx: using the built-in test model (no network): it calls each tool once and reports what came back. Pick a real model with --model openai:MODEL or --model anthropic:MODEL (keys from OPENAI_API_KEY / ANTHROPIC_API_KEY), or --base-url URL --model openai:MODEL for a local OpenAI-compatible server.";

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// What to ask the agent.
    prompt: String,
    /// `test` (no network, the default), `openai:MODEL` or `anthropic:MODEL`.
    #[arg(long, default_value = "test", value_name = "MODEL")]
    model: String,
    /// Base URL of an OpenAI-compatible or Anthropic API (e.g. a local vLLM, llama.cpp or Ollama server).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// Built-in tools or bundles, comma-separated (default: filesystem).
    #[arg(long, value_delimiter = ',', value_name = "SPEC")]
    tools: Vec<String>,
    /// Contain the filesystem tools under this directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    base_path: Option<PathBuf>,
    /// Most model requests in the run.
    #[arg(long, default_value_t = 50, value_name = "N")]
    max_turns: u32,
    /// Print one JSON event per line instead of text.
    #[arg(long)]
    json: bool,
    /// Make one complete (non-streaming) model request per turn.
    #[arg(long)]
    no_stream: bool,
    /// Approve every tool call that would otherwise ask.
    #[arg(long, short = 'y')]
    yes: bool,
    #[command(flatten)]
    sandbox: SandboxArgs,
    #[command(flatten)]
    web: WebArgs,
    #[command(flatten)]
    permissions: PermissionArgs,
}

fn model_for(spec: &str, base_url: Option<&str>) -> Result<Arc<dyn Model>, CliError> {
    let (provider, name) = spec.split_once(':').unwrap_or((spec, ""));
    let name = name.trim();
    match provider {
        "test" if name.is_empty() => {
            if base_url.is_some() {
                return Err(CliError::Usage("--base-url needs an openai: or anthropic: model".into()));
            }
            eprintln!("{TEST_MODEL_NOTICE}");
            Ok(Arc::new(TestModel::new()))
        }
        "openai" if !name.is_empty() => {
            let mut model = OpenAiModel::new(name);
            if let Some(url) = base_url {
                model = model.base_url(url);
            }
            Ok(Arc::new(model))
        }
        "anthropic" if !name.is_empty() => {
            let mut model = AnthropicModel::new(name);
            if let Some(url) = base_url {
                model = model.base_url(url);
            }
            Ok(Arc::new(model))
        }
        _ => Err(CliError::Usage(format!(
            "unknown model \"{spec}\": use test, openai:MODEL or anthropic:MODEL (e.g. openai:gpt-4o)"
        ))),
    }
}

pub(crate) async fn run(args: RunArgs) -> Result<ExitCode, CliError> {
    let model = model_for(&args.model, args.base_url.as_deref())?;
    let registry = ToolRegistry::new();
    // File tools are contained under the current directory unless --base-path says where.
    let base_path = BasePath::from_flag(args.base_path, || std::env::current_dir().ok());
    if let BasePath::Host = base_path {
        return Err(CliError::Usage(
            "the current directory cannot be read, so it cannot contain the file tools; pass --base-path DIR"
                .into(),
        ));
    }
    let took_base_path = args.sandbox.bind(&registry, &base_path)?;
    load_tools(&registry, &args.tools, &["filesystem"], &base_path, took_base_path, &args.web)?;
    let mut manager = args.permissions.manager(PermissionLevel::Allow);
    // Tools that may change things (destructive, or not read-only, by their annotations)
    // ask first, unless a flag named them.
    for def in registry.list_tools() {
        if def.annotations.may_modify() && manager.override_for(&def.name).is_none() {
            manager.set_override(def.name, PermissionLevel::Ask);
        }
    }
    manager = if args.yes {
        approve::approve_all(manager)
    } else if approve::interactive() {
        approve::prompt_on_terminal(manager)
    } else {
        manager // no way to approve: ASK is denied
    };
    let agent = Agent::builder()
        .model_arc(model)
        .registry(registry)
        .permissions(manager)
        .config(AgentConfig { max_turns: args.max_turns, stream: !args.no_stream, ..AgentConfig::default() })
        .build()
        .map_err(CliError::usage)?;
    let mut events = agent.run_stream(args.prompt);
    let mut failed = false;
    let mut printed_text = false;
    let mut progress = approve::Progress::default();
    let mut stdout = std::io::stdout();
    while let Some(event) = events.next().await {
        if matches!(event, AgentEvent::Error { .. }) {
            failed = true;
        }
        if args.json {
            let line = serde_json::to_string(&event).map_err(CliError::failed)?;
            let _ = writeln!(stdout, "{line}");
            continue;
        }
        match event {
            AgentEvent::TextDelta { text } => {
                printed_text = true;
                let _ = write!(stdout, "{text}");
                let _ = stdout.flush();
            }
            AgentEvent::ToolCallStart { name, arguments, .. } => {
                progress.line(format!("→ {name} {}", one_line(&arguments, 120)));
            }
            AgentEvent::ToolCallEnd { name, is_error, content, .. } => {
                let mark = if is_error { "✗" } else { "✓" };
                progress.line(format!("{mark} {name}: {}", one_line(&content, 120)));
            }
            AgentEvent::RunEnd { output, .. } => {
                progress.flush();
                // Without streaming, the answer arrives whole here.
                if !printed_text {
                    let _ = write!(stdout, "{output}");
                }
                let _ = writeln!(stdout);
            }
            AgentEvent::ModelRequest { .. } => printed_text = false,
            AgentEvent::Error { message } => {
                progress.flush();
                eprintln!("harnessx: the run failed: {message}");
            }
            _ => {}
        }
    }
    agent.close().await;
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max { flat.chars().take(max).collect::<String>() + "…" } else { flat }
}
