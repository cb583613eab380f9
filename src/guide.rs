//! The user guide: the pages of `docs/`, included here so that every snippet in them is
//! compiled and run as a doctest (a test of the facade fails when a page is left out; the
//! table of contents, `SUMMARY.md`, has no snippet and is checked to list every page).

#[doc = include_str!("../docs/execution.md")]
pub mod execution {}

#[cfg(feature = "agent")]
#[doc = include_str!("../docs/permissions.md")]
pub mod permissions {}

#[cfg(feature = "agent")]
#[doc = include_str!("../docs/hooks.md")]
pub mod hooks {}

#[cfg(feature = "agent")]
#[doc = include_str!("../docs/agent.md")]
pub mod agent {}

#[cfg(feature = "agent")]
#[doc = include_str!("../docs/evals.md")]
pub mod evals {}

#[cfg(feature = "agent")]
#[doc = include_str!("../docs/context.md")]
pub mod context {}

#[cfg(all(feature = "agent", feature = "durable"))]
#[doc = include_str!("../docs/content.md")]
pub mod content {}

#[cfg(feature = "serve")]
#[doc = include_str!("../docs/serve.md")]
pub mod serve {}
#[doc = include_str!("../docs/output.md")]
pub mod output {}

#[cfg(feature = "agent")]
#[doc = include_str!("../docs/planning.md")]
pub mod planning {}

#[cfg(feature = "agent")]
#[doc = include_str!("../docs/skills.md")]
pub mod skills {}

#[cfg(feature = "agent")]
#[doc = include_str!("../docs/knowledge.md")]
pub mod knowledge {}

#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
#[doc = include_str!("../docs/models.md")]
pub mod models {}

#[doc = include_str!("../docs/builtin-filesystem.md")]
pub mod builtin_filesystem {}

#[cfg(feature = "web")]
#[doc = include_str!("../docs/builtin-web.md")]
pub mod builtin_web {}

#[cfg(feature = "agent")]
#[doc = include_str!("../docs/builtin-bash.md")]
pub mod builtin_bash {}

#[doc = include_str!("../docs/builtin-memory.md")]
pub mod builtin_memory {}

#[doc = include_str!("../docs/tools.md")]
pub mod tools {}

#[doc = include_str!("../docs/workspace.md")]
pub mod workspace {}

#[cfg(feature = "durable")]
#[doc = include_str!("../docs/durable.md")]
pub mod durable {}

#[cfg(feature = "durable")]
#[doc = include_str!("../docs/budgets.md")]
pub mod budgets {}

#[cfg(feature = "mcp")]
#[doc = include_str!("../docs/mcp.md")]
pub mod mcp {}

#[cfg(feature = "otel")]
#[doc = include_str!("../docs/observability.md")]
pub mod observability {}

#[doc = include_str!("../docs/performance.md")]
pub mod performance {}

#[doc = include_str!("../docs/cli.md")]
pub mod cli {}
