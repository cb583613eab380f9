//! `fetch_url`'s handler: the guarded client, the capped download, and the result.

use harnessx_core::error::error_chain;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use harnessx_core::tool::decode::decode_args;
use harnessx_core::{AsyncToolHandler, BoxFuture, HandlerResult, Parts, ToolContext, ToolError, ToolOutput};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::{StatusCode, redirect};
use serde::Deserialize;
use serde_json::{Value, json};
use url::Url;

use super::convert::{self, Kind};
use super::guard::{Access, Refusal};
use super::image;

pub(super) const DESCRIPTION: &str = "Fetch a web page or file over http(s) and return its content as text: HTML is converted to Markdown (links kept, scripts and styles dropped); plain text, JSON and XML are returned as they are; a PNG, JPEG, GIF or WebP image is returned as an image you can see (SVG as text); other types (PDFs, archives) are not read. Only public addresses are reachable. Long pages are cut, and the result says where.";

/// What one `fetch_url` binding was configured with.
#[derive(Debug, Clone)]
pub(super) struct Config {
    pub(super) access: Access,
    /// A fixed `max_length`; `None` lets the model pass one.
    pub(super) max_length: Option<usize>,
    /// The default when the model passes none.
    pub(super) default_max_length: usize,
    pub(super) max_bytes: usize,
    pub(super) max_redirects: usize,
    pub(super) proxy: Option<String>,
    pub(super) user_agent: String,
}

/// The handler; its client is built on the first call (and kept), so registering the tool
/// does no TLS set-up.
pub(super) struct FetchHandler {
    pub(super) config: Arc<Config>,
    pub(super) client: OnceLock<Result<reqwest::Client, String>>,
}

#[derive(Deserialize)]
struct Args {
    url: String,
    max_length: Option<usize>,
}

impl AsyncToolHandler for FetchHandler {
    fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<HandlerResult> {
        let config = self.config.clone();
        let client = self.client.get_or_init(|| build_client(&config)).clone();
        Box::pin(async move {
            let Args { url, max_length } = decode_args(args, &ctx)?;
            let client =
                client.map_err(|e| ToolError::new(format!("could not set up the HTTP client: {e}")))?;
            let max_length = config.max_length.or(max_length).unwrap_or(config.default_max_length).max(1);
            fetch(&client, &config, &url, max_length).await
        })
    }
}

/// A resolver that looks names up with the system's resolver, then keeps only the
/// addresses [`Access`] allows: the check happens on the very addresses the connection
/// will use.
struct GuardedResolver {
    access: Access,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let access = self.access.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<IpAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.map(|a: SocketAddr| a.ip()).collect();
            let kept = access.filter_resolved(&host, found)?;
            let addrs: Addrs = Box::new(kept.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

/// Too many redirects, as a result line.
#[derive(Debug)]
struct TooManyRedirects(usize);

impl std::fmt::Display for TooManyRedirects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "stopped after {} redirects", self.0)
    }
}

impl std::error::Error for TooManyRedirects {}

pub(super) fn build_client(config: &Config) -> Result<reqwest::Client, String> {
    let access = config.access.clone();
    let max_redirects = config.max_redirects;
    let policy = redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() > max_redirects {
            return attempt.error(TooManyRedirects(max_redirects));
        }
        match access.check_url(attempt.url()) {
            Ok(()) => attempt.follow(),
            Err(refusal) => attempt.error(refusal),
        }
    });
    let builder = harnessx_infra::http_client::builder()
        .dns_resolver(GuardedResolver { access: config.access.clone() })
        .redirect(policy)
        .connect_timeout(Duration::from_secs(20))
        .user_agent(config.user_agent.clone());
    let builder = match &config.proxy {
        // Proxy environment variables are ignored: a proxy is used only when configured.
        None => builder.no_proxy(),
        Some(proxy) => builder.proxy(reqwest::Proxy::all(proxy.as_str()).map_err(|e| error_chain(&e))?),
    };
    builder.build().map_err(|e| error_chain(&e))
}

async fn fetch(client: &reqwest::Client, config: &Config, raw: &str, max_length: usize) -> HandlerResult {
    let url =
        Url::parse(raw.trim()).map_err(|e| ToolError::new(format!("`{raw}` is not a valid URL: {e}")))?;
    config.access.check_url(&url).map_err(|r| ToolError::new(r.0))?;
    // The same parsed URL that was checked is the one requested.
    let mut response = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "text/html, text/*;q=0.9, application/json;q=0.9, */*;q=0.5")
        .send()
        .await
        .map_err(|e| ToolError::new(describe(&e, &url)))?;
    let status = response.status();
    let final_url = response.url().clone();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let (essence, charset) = convert::parse_content_type(&content_type);
    if status.is_redirection() {
        // reqwest hands back, unfollowed, a redirect to a scheme it does not fetch.
        let location = response.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok());
        if let Some(target) = location.and_then(|l| final_url.join(l).ok()) {
            config.access.check_url(&target).map_err(|r| ToolError::new(r.0))?;
            return Err(ToolError::new(format!(
                "could not fetch {url}: {final_url} redirects to {target}, which was not followed"
            )));
        }
    }

    // An image is returned whole or not at all: one that says it is too big is refused
    // before its download.
    if status.is_success()
        && image::declared_image(&essence)
        && let Some(length) = response.content_length().filter(|&n| n > config.max_bytes as u64)
    {
        return Err(image::over_limit(&final_url, &essence, Some(length), config.max_bytes));
    }

    // Stream the (decompressed) body, stopping at the byte cap.
    let mut body = Vec::new();
    let mut capped = false;
    loop {
        let chunk = response.chunk().await.map_err(|e| ToolError::new(describe(&e, &final_url)))?;
        let Some(chunk) = chunk else { break };
        let room = config.max_bytes - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            capped = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    drop(response);

    if status.is_success() && image::is_image_response(&essence, &body) {
        return image::result(&final_url, status.as_u16(), &essence, body, capped, config.max_bytes);
    }
    let kind = convert::kind_of(&essence, &body);
    let shown_type = if essence.is_empty() { "no declared type".to_owned() } else { essence.clone() };
    let mut notes = Vec::new();
    if final_url != url {
        notes.push(format!("redirected to {final_url}"));
    }
    let (text, encoding) = match kind {
        Kind::Other => {
            let line = format!(
                "{final_url} is {shown_type} ({}{} bytes), which fetch_url does not read: it returns HTML, text, JSON, XML and images (PNG, JPEG, GIF, WebP).",
                if capped { "more than " } else { "" },
                body.len()
            );
            return finish(
                status,
                &final_url,
                line,
                json!({"url": final_url.as_str(), "status": status.as_u16(), "content_type": essence}),
            );
        }
        Kind::Html => {
            // Off the async threads: a big or hostile page never stalls other tasks, and
            // the timeout ends the call whatever the page.
            let (page, encoding) = convert::convert_body(body, charset).await.map_err(ToolError::new)?;
            notes.extend(page.notes);
            (page.markdown, encoding)
        }
        Kind::Text => {
            let (text, encoding) = convert::decode(&body, charset.as_deref(), false);
            (text, encoding)
        }
    };
    if capped {
        notes.push(format!("download stopped at the {} byte limit; the page is longer", config.max_bytes));
    }
    let total_chars = text.chars().count();
    let truncated = convert::truncate(&text, max_length);
    let cut_here = truncated.is_some();
    let mut content = match truncated {
        Some(cut) => {
            let shown = cut.chars().count();
            notes.push(format!(
                "truncated: showing the first {shown} of {total_chars} characters (max_length {max_length})"
            ));
            cut.to_owned()
        }
        None => text,
    };
    for note in &notes {
        content.push_str(&format!("\n\n[{note}]"));
    }
    let structured = json!({
        "url": final_url.as_str(),
        "status": status.as_u16(),
        "content_type": essence,
        "encoding": encoding,
        "characters": total_chars,
        "truncated": cut_here,
        "byte_limit_reached": capped,
    });
    finish(status, &final_url, content, structured)
}

/// A success status gives the content; any other an error result that starts with the
/// status line and keeps the start of the page (servers explain errors there).
fn finish(status: StatusCode, url: &Url, content: String, structured: Value) -> HandlerResult {
    if status.is_success() {
        return Ok(ToolOutput { content, structured_content: Some(structured), parts: Parts::new() });
    }
    let excerpt = convert::truncate(&content, 1000).unwrap_or(&content);
    Err(ToolError::new(format!("HTTP {status} from {url}\n\n{excerpt}")))
}

/// One line for a failed request: a refusal as it was written; otherwise what went wrong,
/// with the causes (a certificate problem is named there).
fn describe(error: &reqwest::Error, url: &Url) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(refusal) = e.downcast_ref::<Refusal>() {
            return refusal.0.clone();
        }
        if let Some(hops) = e.downcast_ref::<TooManyRedirects>() {
            return format!("could not fetch {url}: {hops}");
        }
        source = e.source();
    }
    let what = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else if error.is_redirect() {
        "redirect failed"
    } else {
        "request failed"
    };
    format!("could not fetch {url}: {what}: {}", error_chain(error))
}
