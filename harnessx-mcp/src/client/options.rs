//! [`McpOptions`]: which of a server's tools to register, and how.

use harnessx_core::PermissionLevel;

/// Which of a server's tools to register, and how.
#[derive(Debug, Clone, Default)]
pub struct McpOptions {
    /// Only these tools (by the server's names); all when `None`.
    pub include: Option<Vec<String>>,
    /// Not these (by the server's names).
    pub exclude: Vec<String>,
    /// Put before each name, to keep two servers' tools apart (`fs_` + `read_file`).
    pub prefix: Option<String>,
    /// The permission of every tool registered; omitted, they follow the manager.
    pub permission: Option<PermissionLevel>,
    /// Whether the server is trusted to describe its own tools (`false` by default).
    ///
    /// MCP's annotations are the server's own claims, and the specification says clients
    /// must consider them untrusted unless they come from trusted servers. So a hint that
    /// makes a call more careful always applies (`destructiveHint: true`, so a CLI run
    /// asks first), while the hints that relax something apply only when this is `true`:
    /// `readOnlyHint: true` (the tool runs concurrently, and a CLI run does not ask) and
    /// `idempotentHint: true` (the `idempotent` replay policy: re-run after a crash,
    /// retried). See [`register_mcp`](crate::register_mcp).
    pub trust_hints: bool,
    /// Offer the server's resources to the model as two tools, `{PREFIX}list_resources`
    /// and `{PREFIX}read_resource` (`Some("")`: without a prefix); `None` (the default):
    /// not offered. Blobs come back as media parts.
    pub resources: Option<String>,
    /// Who answers the server's questions mid-call (MCP elicitation): a person at a
    /// terminal, a page. `None`: every question is declined at once (never a wait).
    pub elicit: Option<super::elicit::Elicitor>,
}
