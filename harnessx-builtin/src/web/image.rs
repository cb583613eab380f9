//! `fetch_url` on an image: a PNG, JPEG, GIF or WebP response comes back as an image part
//! with a line naming it, whole and within the download limit, or refused with one line.
//!
//! What the response is comes from its content ([`sniff`]), with the declared type as a
//! claim to check:
//! - declared `image/png`, `image/jpeg`, `image/gif` or `image/webp` (or `image/jpg`): the
//!   body must sniff as one of those four, and is given the type it really has; a body
//!   that is not an image is refused (the type lied);
//! - no declared type, or `application/octet-stream`: an image by content is an image;
//! - any other declared type (HTML, text, JSON, ...) is read as that type, even if its
//!   first bytes look like an image's signature (text may start with `GIF89a`);
//! - `image/svg+xml` is never an image part: it is XML, which can carry script, and is
//!   returned as text like any other `+xml` type.
//!
//! An image over the download limit is refused, never cut short (half an image is
//! garbage to a provider): before the download when `Content-Length` says so, otherwise
//! when the capped download reaches the limit. The header is checked
//! ([`check_image`]: dimensions that parse and are sane, nothing decoded).

use harnessx_core::content::Part;
use harnessx_core::{HandlerResult, Parts, ToolError, ToolOutput};
use serde_json::json;
use url::Url;

use crate::media::{check_image, is_image, sniff};

/// Whether the declared media type (lowercased, without parameters) is an image type
/// `fetch_url` returns as an image.
pub(super) fn declared_image(essence: &str) -> bool {
    is_image(essence) || essence == "image/jpg"
}

/// Whether a response is handled as an image: declared as one, or an image by content
/// with no declared type that says otherwise.
pub(super) fn is_image_response(essence: &str, body: &[u8]) -> bool {
    declared_image(essence)
        || (matches!(essence, "" | "application/octet-stream" | "binary/octet-stream")
            && sniff(body).is_some_and(is_image))
}

/// The refusal of an image over the download limit; `size` is its length when known.
pub(super) fn over_limit(url: &Url, essence: &str, size: Option<u64>, max_bytes: usize) -> ToolError {
    let what = if essence.is_empty() { "an image" } else { essence };
    let size = match size {
        Some(n) => format!("{n} bytes"),
        None => format!("more than {max_bytes} bytes"),
    };
    ToolError::new(format!(
        "refused: {url} is {what} of {size}, over the {max_bytes} byte download limit; it is not returned"
    ))
}

/// The result for a response [`is_image_response`] took as an image, downloaded up to the
/// limit (`capped`: the limit was reached, so the body is not whole).
pub(super) fn result(
    url: &Url,
    status: u16,
    essence: &str,
    body: Vec<u8>,
    capped: bool,
    max_bytes: usize,
) -> HandlerResult {
    if capped {
        return Err(over_limit(url, essence, None, max_bytes));
    }
    let Some(media_type) = sniff(&body).filter(|t| is_image(t)) else {
        return Err(ToolError::new(format!(
            "refused: {url} says it is {essence} but its content is not an image ({} bytes); it is not returned",
            body.len()
        )));
    };
    let (width, height) = check_image(media_type, &body)
        .map_err(|why| ToolError::new(why.message(url.as_str(), media_type)))?;
    let bytes = body.len();
    let mut content = format!("[image: {media_type}, {bytes} bytes] {url}");
    if !essence.is_empty() && essence != media_type {
        content.push_str(&format!(" (served as {essence})"));
    }
    let structured = json!({
        "url": url.as_str(), "status": status, "content_type": essence, "media_type": media_type,
        "bytes": bytes, "width": width, "height": height,
    });
    Ok(ToolOutput { content, structured_content: Some(structured), parts: Parts::new() }
        .with_part(Part::image(media_type, body)))
}
