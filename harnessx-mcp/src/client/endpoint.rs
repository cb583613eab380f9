//! [`McpServer`]: the server to connect to, a command line or a URL.

/// An MCP server to connect to.
#[derive(Debug, Clone)]
pub struct McpServer {
    pub(super) kind: Kind,
}

/// How the server is reached.
#[derive(Debug, Clone)]
pub(super) enum Kind {
    Stdio { command: String, args: Vec<String>, env: Vec<(String, String)> },
    Http { url: String, headers: Vec<(String, String)> },
}

impl McpServer {
    /// A server run as a child process, spoken to over its stdin and stdout.
    pub fn stdio(
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
        env: impl IntoIterator<Item = (impl Into<String>, impl Into<String>)>,
    ) -> Self {
        Self {
            kind: Kind::Stdio {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: env.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
            },
        }
    }

    /// A server at `url`, spoken to over MCP's streamable HTTP, with `headers` on every
    /// request (an `Authorization` header, say).
    pub fn http(
        url: impl Into<String>,
        headers: impl IntoIterator<Item = (impl Into<String>, impl Into<String>)>,
    ) -> Self {
        Self {
            kind: Kind::Http {
                url: url.into(),
                headers: headers.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
            },
        }
    }

    /// The command line or the URL, for messages.
    pub fn display(&self) -> String {
        match &self.kind {
            Kind::Stdio { command, args, .. } => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            Kind::Http { url, .. } => url.clone(),
        }
    }
}
