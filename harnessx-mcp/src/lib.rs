//! MCP both ways for harnessx, over `rmcp`.
//!
//! - [`register_mcp`]: the tools of an MCP server registered in a [`ToolRegistry`], where
//!   they go through the same pipeline as any other tool (name repair, validation,
//!   permissions, ordering, timeouts). A server's `notifications/tools/list_changed`
//!   updates the registry; an agent sends the new set to the model from its next turn.
//! - [`serve_mcp`]: any registry served over MCP (stdio, any byte streams, streamable
//!   HTTP), every call through the same pipeline, ASK calls asked through elicitation.
//!
//! The client is `client.rs` and the folder beside it, the server `server.rs` and its
//! folder, one concern a file; `error.rs` holds [`McpError`]. See `docs/mcp.md`.
//!
//! [`ToolRegistry`]: harnessx_core::ToolRegistry

mod client;
mod error;
mod server;

pub use client::{MCP_TIMEOUT_SECONDS, McpConnection, McpOptions, McpServer, register_mcp};
pub use error::McpError;
pub use server::{McpServing, McpTransport, serve_mcp};
