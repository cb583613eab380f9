//! `harnessx tools list | schema | call`.

use std::io::Read;
use std::process::ExitCode;

use clap::Subcommand;
use harnessx::{ToolCall, ToolRegistry};
use serde_json::json;

use crate::error::CliError;
use crate::output::Stdout;
use crate::setup::flags::{HookArgs, McpArgs, PermissionArgs, SandboxArgs, ToolArgs, WebArgs};
use crate::setup::{Approvals, BasePath, Tools, connect_mcp, permissions};

#[derive(Debug, Subcommand)]
pub(crate) enum ToolsCommand {
    /// List tools: name and the first line of the description.
    List {
        /// Built-in tools or bundles to list, comma-separated (default: all, or none
        /// when --mcp or --mcp-http is given).
        #[arg(long, value_delimiter = ',', value_name = "SPEC")]
        tools: Vec<String>,
        #[command(flatten)]
        mcp: McpArgs,
        /// Print the canonical tool schemas as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a tool's canonical schema (name, description, input_schema) as JSON.
    Schema {
        /// The tool name.
        name: String,
        /// Built-in tools or bundles to look in, comma-separated (default: all, or none
        /// when --mcp or --mcp-http is given).
        #[arg(long, value_delimiter = ',', value_name = "SPEC")]
        tools: Vec<String>,
        #[command(flatten)]
        mcp: McpArgs,
    },
    /// Call a tool through the same pipeline an agent uses (name repair, validation,
    /// hooks, permissions, timeout).
    Call {
        /// The tool name (as a model would write it).
        name: String,
        /// The arguments, as a JSON object; `-` reads them from standard input (for
        /// arguments too large for the command line).
        #[arg(default_value = "{}")]
        arguments: String,
        #[command(flatten)]
        tools: ToolArgs,
        #[command(flatten)]
        sandbox: SandboxArgs,
        #[command(flatten)]
        web: WebArgs,
        #[command(flatten)]
        permissions: Box<PermissionArgs>,
        #[command(flatten)]
        mcp: McpArgs,
        #[command(flatten)]
        hooks: HookArgs,
        /// Print `{"name", "is_error", "content"}` as one JSON object.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) async fn run(command: ToolsCommand) -> Result<ExitCode, CliError> {
    let mut stdout = Stdout::default();
    match command {
        ToolsCommand::List { tools, mcp, json } => {
            let registry = listed(&tools, &mcp).await?;
            if json {
                let schemas =
                    serde_json::to_string_pretty(&registry.get_tool_params()).map_err(CliError::failed)?;
                stdout.write(format_args!("{schemas}\n"))?;
            } else {
                let width = registry.tool_names().iter().map(String::len).max().unwrap_or(0);
                for def in registry.list_tools() {
                    let first = def.description.lines().next().unwrap_or("");
                    stdout.write(format_args!("{:<width$}  {first}\n", def.name))?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        ToolsCommand::Schema { name, tools, mcp } => {
            let registry = listed(&tools, &mcp).await?;
            let resolved = registry.resolve_name(&name).map_err(CliError::usage)?;
            let spec = registry.get_tool_params().into_iter().find(|s| s.name == resolved);
            let spec = spec.ok_or_else(|| CliError::Usage(format!("no tool named {name}")))?;
            let text = serde_json::to_string_pretty(&spec).map_err(CliError::failed)?;
            stdout.write(format_args!("{text}\n"))?;
            Ok(ExitCode::SUCCESS)
        }
        ToolsCommand::Call { name, arguments, tools, sandbox, web, permissions: flags, mcp, hooks, json } => {
            let builtin: &[&str] = if mcp.given() { &[] } else { &["all"] };
            let base = tools.base_path.clone();
            let registry = Tools {
                specs: &tools.tools,
                default_specs: builtin,
                base_path: BasePath::from_flag(tools.base_path),
                sandbox: &sandbox,
                web: &web,
            }
            .registry()?;
            // The configuration files' hooks and the flags' see the call, as under `run`.
            registry.set_hooks(hooks.tool_hooks(base.as_deref())?);
            // The user typed the call: tools are ALLOW unless flags (or rule files) say
            // otherwise; ASK is asked on the terminal, and denied without one. The rules
            // are those `run` applies, checked the same way.
            let (manager, rules) = permissions(&flags, Approvals::here(false), base.as_deref())?;
            let connections = connect_mcp(&mcp, &registry).await?;
            if let Err(e) = rules.install(&manager, &registry) {
                for connection in connections {
                    connection.close().await;
                }
                return Err(e);
            }
            let arguments = if arguments == "-" { read_stdin()? } else { arguments };
            let result = registry.execute(&ToolCall::new("cli", name, arguments), Some(&manager)).await;
            for connection in connections {
                connection.close().await;
            }
            if json {
                let mut object =
                    json!({"name": result.name, "is_error": result.is_error, "content": result.content});
                if !result.parts.is_empty() {
                    // Media as their summaries, as `run --json` shows them: never base64.
                    object["parts"] = result.parts.iter().map(harnessx::content::Part::describe).collect();
                }
                stdout.write(format_args!("{object}\n"))?;
            } else {
                let newline = if result.content.ends_with('\n') { "" } else { "\n" };
                stdout.write(format_args!("{}{newline}", result.content))?;
            }
            Ok(if result.is_error { ExitCode::FAILURE } else { ExitCode::SUCCESS })
        }
    }
}

/// The tools `tools list` and `tools schema` show: the built-ins `specs` (default all, or
/// none when MCP servers are named) and the servers' tools, whose connections are closed
/// once their tools are registered (nothing runs).
async fn listed(specs: &[String], mcp: &McpArgs) -> Result<ToolRegistry, CliError> {
    let builtin: &[&str] = if mcp.given() { &[] } else { &["all"] };
    let registry = everything(specs, builtin)?;
    for connection in connect_mcp(mcp, &registry).await? {
        connection.close().await;
    }
    Ok(registry)
}

/// The built-in tools `specs` (default `default_specs`) as listed: not contained, no
/// sandbox, no web flags; nothing runs.
fn everything(specs: &[String], default_specs: &[&str]) -> Result<ToolRegistry, CliError> {
    Tools {
        specs,
        default_specs,
        base_path: BasePath::Host,
        sandbox: &SandboxArgs::default(),
        web: &WebArgs::default(),
    }
    .registry()
}

/// The whole of standard input, as the arguments of `tools call NAME -`.
fn read_stdin() -> Result<String, CliError> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| CliError::Usage(format!("reading the arguments from standard input: {e}")))?;
    Ok(text)
}
