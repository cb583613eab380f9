#![doc = include_str!("../README.md")]

pub mod auth;
mod client;
mod error;
mod server;

pub use client::{
    ElicitAnswer, Elicitation, Elicitor, MCP_TIMEOUT_SECONDS, McpConnection, McpOptions, McpPrompt,
    McpPromptMessage, McpRole, McpServer, register_mcp,
};
pub use error::McpError;
pub use server::{McpServing, McpTransport, PromptSource, serve_mcp, serve_mcp_with_prompts};
