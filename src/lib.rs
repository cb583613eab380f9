#![doc = include_str!("../README.md")]
// This facade re-exports `harnessx_core` (the tool layer), the `#[tool]` / `#[toolbox]`
// macros, the built-in bundles as `builtin` and, with the default feature `agent`, the
// agent loop as `agent` and its models as `model`; the guide is `guide`, from `docs/`.
#![forbid(unsafe_code)]

/// The agent loop: `harnessx::agent::Agent`, `AgentConfig`, events, specialists (feature `agent`).
#[cfg(feature = "agent")]
pub use harnessx_agent as agent;
/// Models: the `Model` trait, test models and the provider adapters (feature `agent`;
/// `OpenAiModel` with `openai`, `AnthropicModel` with `anthropic`).
#[cfg(feature = "agent")]
pub use harnessx_agent::model;
/// The built-in bundles (filesystem, planning, ...): `harnessx::builtin::fs::register_filesystem_tools`.
pub use harnessx_builtin as builtin;
pub use harnessx_core::*;
/// Durable runs (`AgentRuntime`, journals); see `docs/durable.md`.
#[cfg(feature = "durable")]
pub use harnessx_durable as durable;
pub use harnessx_macros::{tool, toolbox};
/// MCP both ways: `register_mcp` (tools from MCP servers) and `serve_mcp` (a registry
/// served over MCP); see `docs/mcp.md` (feature `mcp`).
#[cfg(feature = "mcp")]
pub use harnessx_mcp as mcp;
/// Durable runs over HTTP: `harnessx::serve::router(..)`, an axum `Router` of the API and
/// its page (feature `serve`; see `docs/serve.md`).
#[cfg(feature = "serve")]
pub use harnessx_serve as serve;

/// Record and replay model exchanges for your own tests, offline: `RecordingModel`,
/// `ReplayModel`, `Cassette`, and `FunctionModel` for a scripted model (feature `agent`).
#[cfg(feature = "agent")]
pub mod testing {
    pub use harnessx_agent::model::FunctionModel;
    pub use harnessx_agent::testing::*;
}

pub mod guide;

/// Spans and their export (see `docs/observability.md`): the switch for recording
/// contents ([`capture_content`](harnessx_core::telemetry::capture_content)) and, with the
/// feature `otel`, `init` to export every run's spans
/// over OTLP or to a JSON-lines file.
pub mod telemetry {
    #[cfg(feature = "otel")]
    pub use harnessx_agent::telemetry::*;
    pub use harnessx_core::telemetry::*;
}
