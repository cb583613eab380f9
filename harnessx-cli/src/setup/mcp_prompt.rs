//! MCP prompts on the command line: `harnessx mcp prompts` lists the servers' prompts,
//! `run --mcp-prompt [SERVER/]NAME --arg K=V` makes one the run's prompt. A server is
//! named as its resource tools are: a configuration file's server by its NAME, the N-th
//! server of the command line `mcpN`, and the only one need not be named.

use harnessx::agent::Prompt;
use harnessx::mcp::{McpConnection, McpRole, register_mcp};
use harnessx::{Part, ToolRegistry};

use crate::error::CliError;
use crate::setup::flags::McpArgs;

/// Each server's name for `--mcp-prompt` (see the module).
pub(crate) fn labels(mcp: &McpArgs) -> Result<Vec<String>, CliError> {
    let count = mcp.servers()?.len();
    Ok((0..count)
        .map(|i| match mcp.configured.get(i) {
            Some((name, _)) => name.clone(),
            None => format!("mcp{}", i + 1),
        })
        .collect())
}

/// Connects the `index`-th server alone (its tools into a registry of its own).
async fn connect(mcp: &McpArgs, index: usize) -> Result<McpConnection, CliError> {
    let (server, options) = mcp
        .servers_with_options()?
        .into_iter()
        .nth(index)
        .ok_or_else(|| CliError::Usage("no such MCP server".into()))?;
    register_mcp(&ToolRegistry::new(), server, options).await.map_err(|e| CliError::Failed(e.to_string()))
}

/// `[SERVER/]NAME` and `K=V` arguments as the prompt of a run: the prompt's messages, its
/// media attached. One user message is the prompt as it is; more are each headed by who
/// says it.
pub(crate) async fn prompt(mcp: &McpArgs, spec: &str, args: &[String]) -> Result<Prompt, CliError> {
    let labels = labels(mcp)?;
    if labels.is_empty() {
        return Err(CliError::Usage(format!(
            "--mcp-prompt {spec}: no MCP server is given (--mcp, --mcp-http or [mcp_servers])"
        )));
    }
    let (index, name) = match spec.split_once('/') {
        Some((server, name)) => match labels.iter().position(|l| l == server) {
            Some(i) => (i, name),
            None => {
                return Err(CliError::Usage(format!(
                    "--mcp-prompt {spec}: no MCP server named {server:?}; the servers are {}",
                    labels.join(", ")
                )));
            }
        },
        None if labels.len() == 1 => (0, spec),
        None => {
            return Err(CliError::Usage(format!(
                "--mcp-prompt {spec}: say which server's, as SERVER/NAME; the servers are {}",
                labels.join(", ")
            )));
        }
    };
    let mut arguments = Vec::with_capacity(args.len());
    for arg in args {
        let (k, v) = arg
            .split_once('=')
            .ok_or_else(|| CliError::Usage(format!("--arg {arg:?}: give it as NAME=VALUE")))?;
        arguments.push((k.to_owned(), v.to_owned()));
    }
    let connection = connect(mcp, index).await?;
    let filled = fill(&connection, &labels[index], name, &arguments).await;
    connection.close().await;
    filled
}

async fn fill(
    connection: &McpConnection,
    label: &str,
    name: &str,
    arguments: &[(String, String)],
) -> Result<Prompt, CliError> {
    // Checked against the server's list first: an unknown name or a missing argument is
    // the command line's fault, said in one line.
    let offered = connection.prompts().await.map_err(|e| CliError::Failed(e.to_string()))?;
    let Some(found) = offered.iter().find(|p| p.name == name) else {
        let names: Vec<&str> = offered.iter().map(|p| p.name.as_str()).collect();
        return Err(CliError::Usage(format!(
            "the MCP server {label} has no prompt {name:?}; it has {}",
            if names.is_empty() { "none".to_owned() } else { names.join(", ") }
        )));
    };
    let missing: Vec<&str> = found
        .arguments
        .iter()
        .filter(|(arg, _, required)| *required && !arguments.iter().any(|(k, _)| k == arg))
        .map(|(arg, ..)| arg.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(CliError::Usage(format!(
            "the prompt {label}/{name} needs {}",
            missing.iter().map(|m| format!("--arg {m}=VALUE")).collect::<Vec<_>>().join(" ")
        )));
    }
    let messages = connection.prompt(name, arguments).await.map_err(|e| CliError::Failed(e.to_string()))?;
    let headed = !(messages.len() == 1 && messages[0].role == McpRole::User);
    let mut texts = Vec::with_capacity(messages.len());
    let mut parts: Vec<Part> = Vec::new();
    for message in messages {
        texts.push(match (headed, message.role) {
            (false, _) => message.text,
            (true, McpRole::User) => format!("User: {}", message.text),
            (true, McpRole::Assistant) => format!("Assistant: {}", message.text),
        });
        parts.extend(message.parts);
    }
    Ok(Prompt::new(texts.join("\n\n")).with_parts(parts))
}

/// `harnessx mcp prompts`: each server's prompts, `SERVER/NAME  description (arguments)`,
/// or with `json` one object per server.
pub(crate) async fn list(mcp: &McpArgs, json: bool) -> Result<Vec<String>, CliError> {
    let labels = labels(mcp)?;
    if labels.is_empty() {
        return Err(CliError::Usage("mcp prompts needs a server: --mcp, --mcp-http or [mcp_servers]".into()));
    }
    let mut lines = Vec::new();
    for (index, label) in labels.iter().enumerate() {
        let connection = connect(mcp, index).await?;
        let listed = connection.prompts().await;
        connection.close().await;
        let prompts = listed.map_err(|e| CliError::Failed(e.to_string()))?;
        if json {
            let shown: Vec<serde_json::Value> = prompts
                .iter()
                .map(|p| {
                    let arguments: Vec<serde_json::Value> = p
                        .arguments
                        .iter()
                        .map(|(name, description, required)| {
                            serde_json::json!({"name": name, "description": description, "required": required})
                        })
                        .collect();
                    serde_json::json!({"name": p.name, "description": p.description, "arguments": arguments})
                })
                .collect();
            lines.push(serde_json::json!({"server": label, "prompts": shown}).to_string());
            continue;
        }
        for p in &prompts {
            let arguments: Vec<String> = p
                .arguments
                .iter()
                .map(|(name, _, required)| if *required { name.clone() } else { format!("[{name}]") })
                .collect();
            let mut line = format!("{label}/{}", p.name);
            if !arguments.is_empty() {
                line.push_str(&format!(" {}", arguments.join(" ")));
            }
            if let Some(description) = &p.description {
                line.push_str(&format!("  {}", description.split_whitespace().collect::<Vec<_>>().join(" ")));
            }
            lines.push(line);
        }
    }
    Ok(lines)
}
