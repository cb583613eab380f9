//! [`McpError`]: why an MCP server could not be used, or a registry not served.

/// An [`McpError::Auth`]'s line.
fn auth_line(server: &str, reason: &str) -> String {
    if server.is_empty() { reason.to_owned() } else { format!("the MCP server `{server}`: {reason}") }
}

/// Why an MCP server could not be used. One line each.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The server's process could not be started.
    #[error("could not start the MCP server `{command}`: {reason}")]
    Spawn {
        /// The command.
        command: String,
        /// What the OS said.
        reason: String,
    },
    /// The server did not complete the MCP handshake or the tool listing.
    #[error("the MCP server `{server}` {what}: {reason}")]
    Protocol {
        /// The server, as its command line.
        server: String,
        /// What failed (`did not initialize`, `could not list its tools`).
        what: &'static str,
        /// The error.
        reason: String,
    },
    /// The server's description is unusable (a header that HTTP cannot carry).
    #[error("the MCP server `{server}`: {reason}")]
    Config {
        /// The server's URL.
        server: String,
        /// What is wrong.
        reason: String,
    },
    /// A tool of the server has the name of a tool already in the registry: nothing of
    /// the server is registered.
    #[error(
        "the MCP server `{server}` has a tool named \"{name}\", which is already registered; give the server's tools a prefix (McpOptions::prefix) or leave one of the two out"
    )]
    Clash {
        /// The server.
        server: String,
        /// The name, as it would have been registered.
        name: String,
    },
    /// Serving a registry over MCP failed ([`serve_mcp`](crate::serve_mcp)): the client
    /// never completed the handshake, or the transport broke.
    #[error("serving MCP over {transport}: {reason}")]
    Serve {
        /// `stdio`, `io` or `HTTP`.
        transport: String,
        /// What went wrong.
        reason: String,
    },
    /// A login to the server is needed, or could not be made or used
    /// ([`auth`](crate::auth)).
    #[error("{}", auth_line(server, reason))]
    Auth {
        /// The server's URL (empty for the login store's own faults).
        server: String,
        /// What happened, and what to do.
        reason: String,
    },
    /// The registry refused a tool (a name it does not accept).
    #[error(transparent)]
    Registry(#[from] harnessx_core::RegistryError),
}
