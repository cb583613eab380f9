//! [`McpServer`]: the server to connect to, a command line or a URL.

/// An MCP server to connect to.
#[derive(Debug, Clone)]
pub struct McpServer {
    pub(super) kind: Kind,
    /// Where its login is kept, for a server over HTTP.
    pub(super) login: Option<crate::auth::TokenStore>,
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
            login: None,
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
            login: None,
        }
    }

    /// A server over HTTP reached with the login `store` keeps for its URL (`harnessx
    /// mcp login URL`, [`auth::login`](crate::auth::login)), when there is one: its token
    /// sent on every request, refreshed before it expires and after a 401. (An
    /// `Authorization` header given with [`http`](Self::http) wins.) A server that asks
    /// for a login none is kept for fails to connect with one line saying how to log in.
    pub fn logged_in(mut self, store: crate::auth::TokenStore) -> Self {
        self.login = Some(store);
        self
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
