//! A server's prompts: listed ([`McpConnection::prompts`](crate::McpConnection::prompts))
//! and filled in with arguments ([`McpConnection::prompt`](crate::McpConnection::prompt)),
//! their messages as text and media parts.

use harnessx_core::Part;
use rmcp::model::{GetPromptRequestParams, Role};

use super::link::Link;
use super::output::convert;
use crate::McpError;

/// A prompt a server offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpPrompt {
    /// Its name, as `prompts/get` takes it.
    pub name: String,
    /// Its title or description, if the server gives one.
    pub description: Option<String>,
    /// Its arguments: name, description, whether required.
    pub arguments: Vec<(String, Option<String>, bool)>,
}

/// Who says a message of a filled-in prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpRole {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// One message of a filled-in prompt: its text (a line naming each medium in it) and its
/// media.
#[derive(Debug, Clone, PartialEq)]
pub struct McpPromptMessage {
    /// Who says it.
    pub role: McpRole,
    /// Its text.
    pub text: String,
    /// Its media.
    pub parts: Vec<Part>,
}

fn failed(link: &Link, what: &'static str, e: impl std::fmt::Display) -> McpError {
    McpError::Protocol { server: link.shown.clone(), what, reason: e.to_string() }
}

pub(super) async fn list(link: &Link) -> Result<Vec<McpPrompt>, McpError> {
    let service = link.service().await.map_err(|e| failed(link, "could not list its prompts", e))?;
    let prompts =
        service.list_all_prompts().await.map_err(|e| failed(link, "could not list its prompts", e))?;
    Ok(prompts
        .into_iter()
        .map(|p| McpPrompt {
            name: p.name,
            description: p.description.or(p.title),
            arguments: p
                .arguments
                .unwrap_or_default()
                .into_iter()
                .map(|a| (a.name, a.description, a.required == Some(true)))
                .collect(),
        })
        .collect())
}

pub(super) async fn get(
    link: &Link,
    name: &str,
    arguments: &[(String, String)],
) -> Result<Vec<McpPromptMessage>, McpError> {
    let service = link.service().await.map_err(|e| failed(link, "could not give a prompt", e))?;
    let mut params = GetPromptRequestParams::new(name);
    if !arguments.is_empty() {
        let map = arguments.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect();
        params = params.with_arguments(map);
    }
    let result = service
        .get_prompt(params)
        .await
        .map_err(|e| failed(link, "could not give the prompt", format!("{name}: {e}")))?;
    Ok(result
        .messages
        .iter()
        .map(|m| {
            let (text, part) = convert(&m.content);
            McpPromptMessage {
                role: if m.role == Role::Assistant { McpRole::Assistant } else { McpRole::User },
                text,
                parts: part.into_iter().collect(),
            }
        })
        .collect())
}
