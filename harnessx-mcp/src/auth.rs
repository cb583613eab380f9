//! OAuth for MCP servers over HTTP, as the MCP authorization specification lays it out.
//!
//! rmcp's `auth` speaks the protocol: discovery from a 401's `WWW-Authenticate`
//! (protected-resource metadata, then the authorization server's), dynamic client
//! registration where offered, the authorization code with PKCE (S256) and the `resource`
//! parameter, the `state` checked, and refresh tokens used before expiry and after a 401.
//! This is the harness around it:
//!
//! - [`TokenStore`]: the tokens, one file per server origin in the user's data folder
//!   (mode 0600, its folder 0700), never in the project folder;
//! - [`login`]: the flow, with a loopback redirect listener on 127.0.0.1;
//! - [`McpServer::logged_in`](crate::McpServer::logged_in): a server reached with the
//!   stored token, refreshed as it expires.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession, CredentialStore,
    StoredCredentials,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::McpError;

/// The longest a login waits for its redirect by default: five minutes.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// The most bytes of a redirect's request the listener reads.
const REDIRECT_MAX: usize = 16 * 1024;

/// Where the tokens of MCP servers are kept: a folder with one file per server origin
/// (`http_localhost_3000.json`), each readable by its owner only.
#[derive(Debug, Clone)]
pub struct TokenStore {
    dir: PathBuf,
}

/// A server's login, as the store has it (never its tokens).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login {
    /// The server's origin (`https://mcp.example.com`): the key of its file.
    pub origin: String,
    /// The URL it was logged in at.
    pub url: String,
    /// When the access token expires (seconds since the Unix epoch), if the server said.
    pub expires_at: Option<u64>,
    /// Whether a refresh token is kept (the login renews itself).
    pub refreshable: bool,
    /// The scopes granted.
    pub scopes: Vec<String>,
}

impl TokenStore {
    /// The store in folder `dir` (created when first written).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The user's store: `$XDG_DATA_HOME/harnessx/mcp-tokens`, else
    /// `~/.local/share/harnessx/mcp-tokens`.
    pub fn user() -> Result<Self, McpError> {
        let data = std::env::var_os("XDG_DATA_HOME")
            .filter(|d| !d.is_empty() && Path::new(d).is_absolute())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|h| !h.is_empty())
                    .map(|h| PathBuf::from(h).join(".local/share"))
            })
            .ok_or_else(|| McpError::Auth {
                server: String::new(),
                reason: "no folder to keep logins in: neither XDG_DATA_HOME nor HOME is set".into(),
            })?;
        Ok(Self::at(data.join("harnessx").join("mcp-tokens")))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of the server at `url`'s origin.
    fn path(&self, origin: &str) -> PathBuf {
        let name: String = origin
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' })
            .collect();
        self.dir.join(format!("{name}.json"))
    }

    /// Whether a login is kept for the server at `url`.
    pub fn has(&self, url: &str) -> bool {
        origin(url).is_ok_and(|o| self.path(&o).is_file())
    }

    /// Every login kept, by origin.
    pub fn logins(&self) -> Result<Vec<Login>, McpError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(store_error(&self.dir, &e)),
        };
        let mut logins = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "json")
                && let Ok(Some(file)) = read(&path)
            {
                logins.push(file.login());
            }
        }
        logins.sort_by(|a, b| a.origin.cmp(&b.origin));
        Ok(logins)
    }

    /// The login kept for the server at `url`, if any.
    pub fn login(&self, url: &str) -> Result<Option<Login>, McpError> {
        let origin = origin(url)?;
        Ok(read(&self.path(&origin))?.map(|f| f.login()))
    }

    /// Forgets the login of the server at `url`; `false` when there was none.
    pub fn remove(&self, url: &str) -> Result<bool, McpError> {
        let path = self.path(&origin(url)?);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(store_error(&path, &e)),
        }
    }

    /// rmcp's view of the login of the server at `url`.
    pub(crate) fn credentials(&self, url: &str) -> Result<FileCredentials, McpError> {
        let origin = origin(url)?;
        Ok(FileCredentials { path: self.path(&origin), dir: self.dir.clone(), origin, url: url.to_owned() })
    }
}

/// `scheme://host:port` of `url`, or a one-line error.
fn origin(url: &str) -> Result<String, McpError> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| McpError::Auth { server: url.to_owned(), reason: format!("not a URL: {e}") })?;
    let host = parsed
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| McpError::Auth { server: url.to_owned(), reason: "the URL has no host".into() })?;
    let port = parsed.port_or_known_default().unwrap_or(0);
    Ok(format!("{}://{host}:{port}", parsed.scheme()))
}

/// Whether `url` may be reached for a login: HTTPS, or plain HTTP on this machine.
fn check_scheme(url: &str) -> Result<(), McpError> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| McpError::Auth { server: url.to_owned(), reason: format!("not a URL: {e}") })?;
    let loopback = match parsed.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        other => Err(McpError::Auth {
            server: url.to_owned(),
            reason: format!(
                "logins go over HTTPS only (plain HTTP only to this machine), and this URL is {other}:"
            ),
        }),
    }
}

/// A login's file: the URL and rmcp's credentials.
struct File {
    url: String,
    origin: String,
    credentials: StoredCredentials,
}

impl File {
    fn login(&self) -> Login {
        // The token response as JSON (its fields are oauth2's): expiry and refresh token.
        let shown = serde_json::to_value(&self.credentials).unwrap_or(Value::Null);
        let response = &shown["token_response"];
        let expires_at = match (response["expires_in"].as_u64(), self.credentials.token_received_at) {
            (Some(lifetime), Some(received)) => Some(received.saturating_add(lifetime)),
            _ => None,
        };
        Login {
            origin: self.origin.clone(),
            url: self.url.clone(),
            expires_at,
            refreshable: response["refresh_token"].is_string(),
            scopes: self.credentials.granted_scopes.clone(),
        }
    }
}

fn store_error(path: &Path, e: &std::io::Error) -> McpError {
    McpError::Auth { server: String::new(), reason: format!("the login store {}: {e}", path.display()) }
}

/// The file at `path`, if there is one; a file that is not a login is an error naming it.
fn read(path: &Path) -> Result<Option<File>, McpError> {
    let text = match std::fs::read(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(store_error(path, &e)),
    };
    let bad = |what: String| McpError::Auth {
        server: String::new(),
        reason: format!("the login file {} {what}; delete it and log in again", path.display()),
    };
    let value: Value = serde_json::from_slice(&text).map_err(|e| bad(format!("is not JSON: {e}")))?;
    let credentials: StoredCredentials = serde_json::from_value(value["credentials"].clone())
        .map_err(|e| bad(format!("holds no credentials: {e}")))?;
    let field = |name: &str| value[name].as_str().unwrap_or_default().to_owned();
    Ok(Some(File { url: field("url"), origin: field("origin"), credentials }))
}

/// One server's login as rmcp's credential store: the file, written whole (to a file of
/// mode 0600 beside it, then renamed over it).
pub(crate) struct FileCredentials {
    path: PathBuf,
    dir: PathBuf,
    origin: String,
    url: String,
}

impl FileCredentials {
    fn write(&self, credentials: &StoredCredentials) -> std::io::Result<()> {
        use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir)?;
        let body = json!({"url": self.url, "origin": self.origin, "credentials": credentials});
        let partial = self.path.with_extension(format!("json.{}.partial", std::process::id()));
        let mut file =
            std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&partial)?;
        file.write_all(body.to_string().as_bytes())?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&partial, &self.path)
    }
}

fn store_failure(e: impl std::fmt::Display) -> AuthError {
    AuthError::InternalError(format!("the login store: {e}"))
}

#[async_trait::async_trait]
impl CredentialStore for FileCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(read(&self.path).map_err(store_failure)?.map(|f| f.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let size = serde_json::to_vec(&credentials).map_or(usize::MAX, |b| b.len());
        if size > MAX_TOKEN_RESPONSE_BYTES {
            return Err(AuthError::InternalError(format!(
                "the authorization server's token response is {} KiB, more than the {} KiB allowed: refused, nothing stored",
                size / 1024,
                MAX_TOKEN_RESPONSE_BYTES / 1024
            )));
        }
        self.write(&credentials).map_err(store_failure)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(store_failure(e)),
        }
    }
}

/// What a [`login`] asks for.
#[derive(Debug, Clone)]
pub struct LoginOptions {
    /// A client id registered with the authorization server beforehand; `None`: the
    /// server's dynamic client registration.
    pub client_id: Option<String>,
    /// The scopes to ask for; empty: those the server advertises.
    pub scopes: Vec<String>,
    /// How long to wait for the redirect.
    pub timeout: Duration,
    /// Origins (`https://host:port`) besides the server's own that its 401 may name
    /// protected-resource metadata at; any other is refused.
    pub metadata_origins: Vec<String>,
}

impl Default for LoginOptions {
    fn default() -> Self {
        Self { client_id: None, scopes: Vec::new(), timeout: LOGIN_TIMEOUT, metadata_origins: Vec::new() }
    }
}

/// The most a token response may hold, as stored: a larger one is refused, not kept.
pub const MAX_TOKEN_RESPONSE_BYTES: usize = 64 * 1024;

/// The `resource_metadata` URL a `WWW-Authenticate` challenge names, if any.
fn metadata_url(challenge: &str) -> Option<String> {
    let at = challenge.find("resource_metadata=")? + "resource_metadata=".len();
    let rest = &challenge[at..];
    let value = match rest.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next()?,
        None => rest.split([',', ' ']).next()?,
    };
    Some(value.to_owned())
}

/// Refuses a challenge naming protected-resource metadata at another origin than the
/// server's own, unless `allowed` lists it.
fn check_metadata_origin(url: &str, challenge: Option<&str>, allowed: &[String]) -> Result<(), McpError> {
    let Some(metadata) = challenge.and_then(metadata_url) else { return Ok(()) };
    let Ok(named) = reqwest::Url::parse(&metadata).or_else(|_| reqwest::Url::parse(url)?.join(&metadata))
    else {
        return Err(refused(
            url,
            format!("its 401 names protected-resource metadata at `{metadata}`, which is not a URL"),
        ));
    };
    let named = origin(named.as_str())?;
    let own = origin(url)?;
    let listed = |o: &String| origin(o).is_ok_and(|o| o == named);
    if named == own || allowed.iter().any(listed) {
        return Ok(());
    }
    Err(refused(
        url,
        format!(
            "its 401 names protected-resource metadata at {named}, another origin than the server's ({own}): refused (pass --allow-metadata-origin {named} if that is intended)"
        ),
    ))
}

/// Refuses authorization-server endpoints over plain HTTP outside this machine.
fn check_endpoints(
    url: &str,
    metadata: &rmcp::transport::auth::AuthorizationMetadata,
) -> Result<(), McpError> {
    let endpoints = [
        ("authorization endpoint", Some(&metadata.authorization_endpoint)),
        ("token endpoint", Some(&metadata.token_endpoint)),
        ("registration endpoint", metadata.registration_endpoint.as_ref()),
    ];
    for (what, endpoint) in endpoints {
        if let Some(endpoint) = endpoint
            && check_scheme(endpoint).is_err()
        {
            return Err(refused(
                url,
                format!(
                    "its authorization server's {what} `{endpoint}` is not HTTPS (plain HTTP is for this machine only): refused"
                ),
            ));
        }
    }
    Ok(())
}

fn refused(url: &str, reason: impl std::fmt::Display) -> McpError {
    McpError::Auth { server: url.to_owned(), reason: one_line(&reason.to_string()) }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Logs in to the MCP server at `url`: finds its authorization server, registers a
/// client (or uses `options.client_id`), hands the authorization URL to `open` (to print,
/// to open in a browser), waits on a loopback listener for the redirect (its `state`
/// checked), trades the code for tokens and keeps them in `store`. Returns the login.
pub async fn login(
    store: &TokenStore,
    url: &str,
    options: &LoginOptions,
    open: impl FnOnce(&str),
) -> Result<Login, McpError> {
    check_scheme(url)?;
    harnessx_infra::tls::install_default_provider();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| refused(url, format!("could not listen for the redirect on 127.0.0.1: {e}")))?;
    let port = listener.local_addr().map_err(|e| refused(url, e))?.port();
    let redirect = format!("http://127.0.0.1:{port}/callback");

    let mut manager = AuthorizationManager::new(url).await.map_err(|e| refused(url, e))?;
    manager.set_credential_store(store.credentials(url)?);
    let challenge = challenge(url).await;
    check_metadata_origin(url, challenge.as_deref(), &options.metadata_origins)?;
    let resolution = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await
        .map_err(|e| refused(url, format!("could not find its authorization server: {e}")))?;
    check_endpoints(url, &resolution.metadata)?;
    manager.set_metadata(resolution.metadata);
    let mut request = AuthorizationRequest::new(redirect).with_client_name("harnessx");
    if let Some(id) = &options.client_id {
        request = request.with_preregistered_client(id.clone());
    }
    if !options.scopes.is_empty() {
        request = request.with_scopes(options.scopes.iter().cloned());
    }
    let session = AuthorizationSession::new(manager, request).await.map_err(|(_, e)| {
        refused(
            url,
            match &options.client_id {
                None => format!(
                    "could not register a client (give one registered beforehand with --client-id): {e}"
                ),
                Some(_) => e.to_string(),
            },
        )
    })?;
    let authorization_url = session.get_authorization_url().to_owned();
    let sent_state = query(&authorization_url, "state");
    open(&authorization_url);

    let callback = tokio::time::timeout(options.timeout, redirected(&listener))
        .await
        .map_err(|_| {
            refused(
                url,
                format!(
                    "no redirect came back within {} s; run the login again and finish it in the browser",
                    options.timeout.as_secs()
                ),
            )
        })?
        .map_err(|e| refused(url, e))?;
    if let Some(error) = query(&callback, "error") {
        let description = query(&callback, "error_description").map(|d| format!(": {d}")).unwrap_or_default();
        return Err(refused(
            url,
            format!("the authorization server refused the login ({error}{description})"),
        ));
    }
    if query(&callback, "state") != sent_state {
        return Err(refused(
            url,
            "the redirect came back with another `state` than this login sent (a stale or forged redirect); nothing was stored",
        ));
    }
    session
        .handle_callback_url(&callback)
        .await
        .map_err(|e| refused(url, format!("could not trade the code for tokens: {e}")))?;
    store.login(url)?.ok_or_else(|| refused(url, "the tokens were not stored"))
}

/// The `WWW-Authenticate` challenge the server answers an unauthenticated request with,
/// if it does (it names its protected-resource metadata).
async fn challenge(url: &str) -> Option<String> {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().ok()?;
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "harnessx", "version": env!("CARGO_PKG_VERSION")}}});
    let response = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .ok()?;
    if response.status() != reqwest::StatusCode::UNAUTHORIZED {
        return None;
    }
    response.headers().get("www-authenticate")?.to_str().ok().map(str::to_owned)
}

/// The value of parameter `name` in `url`'s query.
fn query(url: &str, name: &str) -> Option<String> {
    reqwest::Url::parse(url).ok()?.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
}

/// Waits for the browser's redirect to `/callback` on `listener` and returns its whole
/// URL; anything else asked of the listener gets a 404.
async fn redirected(listener: &tokio::net::TcpListener) -> Result<String, String> {
    loop {
        let (mut stream, _) =
            listener.accept().await.map_err(|e| format!("the redirect listener failed: {e}"))?;
        let mut head = Vec::new();
        let mut chunk = [0u8; 2048];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < REDIRECT_MAX {
            match tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => head.extend_from_slice(&chunk[..n]),
                _ => break,
            }
        }
        let text = String::from_utf8_lossy(&head);
        let target = text.lines().next().and_then(|l| l.split_whitespace().nth(1)).unwrap_or_default();
        if target.starts_with("/callback?") {
            let page = "<!doctype html><title>harnessx</title><p>Logged in. You can close this window.</p>";
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                page.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
            let _ = stream.shutdown().await;
            let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
            return Ok(format!("http://127.0.0.1:{port}{target}"));
        }
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await;
    }
}

/// A manager for the server at `url` with its stored login, ready to hand out tokens
/// (refreshed when they expire): `None` when no login is kept.
pub(crate) async fn manager(store: &TokenStore, url: &str) -> Result<Option<AuthorizationManager>, McpError> {
    if !store.has(url) {
        return Ok(None);
    }
    let mut manager = AuthorizationManager::new(url).await.map_err(|e| refused(url, e))?;
    manager.set_credential_store(store.credentials(url)?);
    match manager.initialize_from_store().await {
        Ok(true) => Ok(Some(manager)),
        Ok(false) => Ok(None),
        Err(e) => Err(refused(
            url,
            format!("the stored login could not be used ({e}); run `harnessx mcp login {url}`"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_servers_file_is_named_by_its_origin() {
        let store = TokenStore::at("/tmp/x");
        assert_eq!(origin("https://mcp.example.com/mcp?x=1").unwrap(), "https://mcp.example.com:443");
        assert_eq!(origin("http://localhost:3000/mcp").unwrap(), "http://localhost:3000");
        assert_eq!(store.path("http://localhost:3000"), PathBuf::from("/tmp/x/http___localhost_3000.json"));
        assert!(origin("not a url").is_err());
    }

    #[test]
    fn plain_http_is_for_this_machine_only() {
        assert!(check_scheme("https://mcp.example.com/mcp").is_ok());
        assert!(check_scheme("http://localhost:3000/mcp").is_ok());
        assert!(check_scheme("http://127.0.0.1:3000/mcp").is_ok());
        assert!(check_scheme("http://[::1]:3000/mcp").is_ok());
        let error = check_scheme("http://mcp.example.com/mcp").unwrap_err().to_string();
        assert!(error.contains("HTTPS only"), "{error}");
    }

    #[test]
    fn a_challenge_naming_metadata_elsewhere_is_refused_unless_allowed() {
        let url = "https://mcp.example.com/mcp";
        let own =
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp""#;
        assert!(check_metadata_origin(url, Some(own), &[]).is_ok());
        assert!(check_metadata_origin(url, Some("Bearer realm=\"x\""), &[]).is_ok());
        assert!(check_metadata_origin(url, None, &[]).is_ok());
        let relative = r#"Bearer resource_metadata="/.well-known/oauth-protected-resource""#;
        assert!(check_metadata_origin(url, Some(relative), &[]).is_ok());
        let foreign = r#"Bearer error="invalid_token", resource_metadata="https://evil.example.net/meta""#;
        let error = check_metadata_origin(url, Some(foreign), &[]).unwrap_err().to_string();
        assert!(error.contains("https://evil.example.net:443, another origin"), "{error}");
        assert!(error.contains("--allow-metadata-origin https://evil.example.net:443"), "{error}");
        let allowed = ["https://evil.example.net".to_owned()];
        assert!(check_metadata_origin(url, Some(foreign), &allowed).is_ok());
        let unquoted = "Bearer resource_metadata=http://169.254.169.254/latest, scope=x";
        assert!(check_metadata_origin(url, Some(unquoted), &[]).is_err());
    }

    #[test]
    fn a_query_parameter_is_read_decoded() {
        let url = "http://127.0.0.1:1/callback?code=a%20b&state=xyz";
        assert_eq!(query(url, "code").as_deref(), Some("a b"));
        assert_eq!(query(url, "state").as_deref(), Some("xyz"));
        assert_eq!(query(url, "error"), None);
    }
}
