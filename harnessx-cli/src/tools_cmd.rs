//! `harnessx tools list | schema | call`.

use std::process::ExitCode;

use clap::Subcommand;
use harnessx_core::{PermissionLevel, ToolCall, ToolRegistry};
use serde_json::json;

use crate::UsageError;
use crate::approve;
use crate::setup::{PermissionArgs, ToolArgs, load_tools};

#[derive(Debug, Subcommand)]
pub(crate) enum ToolsCommand {
    /// List tools: name and the first line of the description.
    List {
        /// Built-in tools or bundles to list, comma-separated (default: all).
        #[arg(long, value_delimiter = ',', value_name = "SPEC")]
        tools: Vec<String>,
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
        /// The arguments, as a JSON object.
        #[arg(default_value = "{}")]
        arguments: String,
        #[command(flatten)]
        tools: ToolArgs,
        #[command(flatten)]
        permissions: PermissionArgs,
        /// Print `{"name", "is_error", "content"}` as one JSON object.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) async fn run(command: ToolsCommand) -> Result<ExitCode, UsageError> {
    match command {
        ToolsCommand::List { tools, json } => {
            let registry = ToolRegistry::new();
            load_tools(&registry, &tools, &["all"], None)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&registry.get_tool_params())?);
            } else {
                let width = registry.tool_names().iter().map(String::len).max().unwrap_or(0);
                for def in registry.list_tools() {
                    let first = def.description.lines().next().unwrap_or("");
                    println!("{:<width$}  {first}", def.name);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        ToolsCommand::Schema { name } => {
            let registry = ToolRegistry::new();
            load_tools(&registry, &[], &["all"], None)?;
            let resolved = registry.resolve_name(&name).map_err(|e| UsageError(e.to_string()))?;
            let spec = registry.get_tool_params().into_iter().find(|s| s.name == resolved);
            let spec = spec.ok_or_else(|| UsageError(format!("no tool named {name}")))?;
            println!("{}", serde_json::to_string_pretty(&spec)?);
            Ok(ExitCode::SUCCESS)
        }
        ToolsCommand::Call { name, arguments, tools, permissions, json } => {
            let registry = ToolRegistry::new();
            load_tools(&registry, &tools.tools, &["all"], tools.base_path.as_ref())?;
            // The user typed the call: tools are ALLOW unless flags say otherwise; ASK is
            // asked on the terminal, and denied without one.
            let mut manager = permissions.manager(PermissionLevel::Allow);
            if approve::interactive() {
                manager = approve::prompt_on_terminal(manager);
            }
            let result = registry.execute(&ToolCall::new("cli", name, arguments), Some(&manager)).await;
            if json {
                println!(
                    "{}",
                    json!({"name": result.name, "is_error": result.is_error, "content": result.content})
                );
            } else {
                if result.content.ends_with('\n') {
                    print!("{}", result.content)
                } else {
                    println!("{}", result.content)
                }
            }
            Ok(if result.is_error { ExitCode::FAILURE } else { ExitCode::SUCCESS })
        }
    }
}
