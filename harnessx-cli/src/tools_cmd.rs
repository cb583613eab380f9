//! `harnessx tools list | schema | call`.

use std::io::Read;
use std::process::ExitCode;

use clap::Subcommand;
use harnessx::{PermissionLevel, ToolCall, ToolRegistry};
use serde_json::json;

use crate::CliError;
use crate::approve;
use crate::setup::{BasePath, McpArgs, PermissionArgs, SandboxArgs, ToolArgs, WebArgs, load_tools};

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
    },
    /// Call a tool through the same pipeline an agent uses (name repair, validation,
    /// permissions, timeout).
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
        permissions: PermissionArgs,
        #[command(flatten)]
        mcp: McpArgs,
        /// Print `{"name", "is_error", "content"}` as one JSON object.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) async fn run(command: ToolsCommand) -> Result<ExitCode, CliError> {
    match command {
        ToolsCommand::List { tools, mcp, json } => {
            let registry = ToolRegistry::new();
            let builtin: &[&str] = if mcp.given() { &[] } else { &["all"] };
            load_tools(&registry, &tools, builtin, &BasePath::Host, false, &WebArgs::default())?;
            for connection in mcp.connect(&registry).await? {
                connection.close().await;
            }
            if json {
                out(&format!(
                    "{}\n",
                    serde_json::to_string_pretty(&registry.get_tool_params()).map_err(CliError::failed)?
                ))?;
            } else {
                let width = registry.tool_names().iter().map(String::len).max().unwrap_or(0);
                for def in registry.list_tools() {
                    let first = def.description.lines().next().unwrap_or("");
                    out(&format!("{:<width$}  {first}\n", def.name))?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        ToolsCommand::Schema { name } => {
            let registry = ToolRegistry::new();
            load_tools(&registry, &[], &["all"], &BasePath::Host, false, &WebArgs::default())?;
            let resolved = registry.resolve_name(&name).map_err(CliError::usage)?;
            let spec = registry.get_tool_params().into_iter().find(|s| s.name == resolved);
            let spec = spec.ok_or_else(|| CliError::Usage(format!("no tool named {name}")))?;
            out(&format!("{}\n", serde_json::to_string_pretty(&spec).map_err(CliError::failed)?))?;
            Ok(ExitCode::SUCCESS)
        }
        ToolsCommand::Call { name, arguments, tools, sandbox, web, permissions, mcp, json } => {
            let registry = ToolRegistry::new();
            let base_path = BasePath::from_flag(tools.base_path, || None);
            let took_base_path = sandbox.bind(&registry, &base_path)?;
            let builtin: &[&str] = if mcp.given() { &[] } else { &["all"] };
            load_tools(&registry, &tools.tools, builtin, &base_path, took_base_path, &web)?;
            let connections = mcp.connect(&registry).await?;
            let arguments = if arguments == "-" { read_stdin()? } else { arguments };
            // The user typed the call: tools are ALLOW unless flags say otherwise; ASK is
            // asked on the terminal, and denied without one.
            let mut manager = permissions.manager(PermissionLevel::Allow);
            if approve::interactive() {
                manager = approve::prompt_on_terminal(manager);
            }
            let result = registry.execute(&ToolCall::new("cli", name, arguments), Some(&manager)).await;
            for connection in connections {
                connection.close().await;
            }
            if json {
                out(&format!(
                    "{}\n",
                    json!({"name": result.name, "is_error": result.is_error, "content": result.content})
                ))?;
            } else {
                let newline = if result.content.ends_with('\n') { "" } else { "\n" };
                out(&format!("{}{newline}", result.content))?;
            }
            Ok(if result.is_error { ExitCode::FAILURE } else { ExitCode::SUCCESS })
        }
    }
}

/// Writes to standard output. A reader that went away (`harnessx tools call .. | head`)
/// is not an error: there is no one left to tell.
pub(crate) fn out(text: &str) -> Result<(), CliError> {
    crate::write_out(std::io::stdout().lock(), format_args!("{text}"))
        .map_err(|e| CliError::Failed(format!("writing to standard output: {e}")))
}

/// The whole of standard input, as the arguments of `tools call NAME -`.
fn read_stdin() -> Result<String, CliError> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| CliError::Usage(format!("reading the arguments from standard input: {e}")))?;
    Ok(text)
}
