//! From a response body to the text the model reads: the kind of content, the charset,
//! HTML to Markdown, and truncation at a clean boundary.

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};

use super::parse;

/// How a body is read, from its `Content-Type` (or, without one, from its first bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// HTML or XHTML: converted to Markdown.
    Html,
    /// Plain text, JSON, XML, CSS, JavaScript and the like: passed through.
    Text,
    /// Anything else (images, PDFs, archives): not read.
    Other,
}

/// The media type (lowercased, without parameters) and the `charset` parameter.
pub(super) fn parse_content_type(value: &str) -> (String, Option<String>) {
    let mut parts = value.split(';');
    let essence = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
    let charset = parts.find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim().eq_ignore_ascii_case("charset").then(|| v.trim().trim_matches(['"', '\'']).to_owned())
    });
    (essence, charset)
}

/// The kind of a media type; an empty one is sniffed from the body.
pub(super) fn kind_of(essence: &str, body: &[u8]) -> Kind {
    match essence {
        "" => sniff(body),
        "text/html" | "application/xhtml+xml" => Kind::Html,
        e if e.starts_with("text/") => Kind::Text,
        "application/json"
        | "application/xml"
        | "application/javascript"
        | "application/ecmascript"
        | "application/x-javascript"
        | "application/yaml"
        | "application/x-yaml"
        | "application/toml"
        | "application/x-ndjson"
        | "application/sql"
        | "application/graphql" => Kind::Text,
        e if e.ends_with("+json") || e.ends_with("+xml") => Kind::Text,
        _ => Kind::Other,
    }
}

fn sniff(body: &[u8]) -> Kind {
    let head = &body[..body.len().min(1024)];
    let start = head.iter().position(|b| !b.is_ascii_whitespace()).map_or(&[][..], |i| &head[i..]);
    let lower = start.iter().take(64).map(u8::to_ascii_lowercase).collect::<Vec<u8>>();
    if lower.starts_with(b"<!doctype html") || lower.starts_with(b"<html") {
        Kind::Html
    } else if std::str::from_utf8(head).is_ok() || !head.contains(&0) {
        Kind::Text
    } else {
        Kind::Other
    }
}

/// Decodes a body: a byte-order mark wins, then the declared charset, then (for HTML) a
/// `<meta charset>` or `<meta http-equiv="Content-Type">` in the first 1024 bytes; with
/// none, UTF-8 when the bytes are valid UTF-8, else windows-1252 (what browsers assume).
/// Returns the text and the encoding's name.
pub(super) fn decode(body: &[u8], declared: Option<&str>, html: bool) -> (String, &'static str) {
    let label = declared
        .and_then(|l| Encoding::for_label(l.as_bytes()))
        .or_else(|| if html { meta_charset(body) } else { None });
    let encoding = match label {
        Some(e) => e,
        None if std::str::from_utf8(body).is_ok() => UTF_8,
        // A body cut by the byte cap may end inside a UTF-8 sequence: judge the rest.
        None if body.len() > 4 && std::str::from_utf8(&body[..body.len() - 4]).is_ok() => UTF_8,
        None => WINDOWS_1252,
    };
    let (text, used, _) = encoding.decode(body);
    (text.into_owned(), used.name())
}

/// The charset a `<meta>` tag in the first 1024 bytes declares.
fn meta_charset(body: &[u8]) -> Option<&'static Encoding> {
    let head = String::from_utf8_lossy(&body[..body.len().min(1024)]).to_ascii_lowercase();
    let mut rest = head.as_str();
    while let Some(i) = rest.find("<meta") {
        rest = &rest[i + 5..];
        let tag = &rest[..rest.find('>').unwrap_or(rest.len())];
        let Some(j) = tag.find("charset") else { continue };
        let Some(value) = tag[j + 7..].trim_start().strip_prefix('=') else { continue };
        let value = value.trim_start().trim_start_matches(['"', '\'']);
        let end = value.find(|c: char| c == '"' || c == '\'' || c == ';' || c == '/' || c.is_whitespace());
        if let Some(e) = Encoding::for_label(&value.as_bytes()[..end.unwrap_or(value.len())]) {
            return Some(e);
        }
    }
    None
}

/// HTML to Markdown: headings, lists, tables, code, emphasis and links (`[text](href)`)
/// kept; `<script>`, `<style>`, `<noscript>`, `<template>`, `<svg>`, `<iframe>` and
/// `<head>` dropped. Runs of blank lines are squeezed.
///
/// Any page converts in bounded time, memory and stack: elements nested deeper than about
/// 256 levels are dropped and their text kept in the element around them, and the result
/// then ends with one line saying so (`[nested too deeply: ...]`). The conversion runs on
/// a thread of its own with a stack sized for that depth, so it never depends on the
/// caller's.
///
/// ```
/// let md = harnessx_builtin::web::html_to_markdown(
///     "<h1>Hi</h1><script>alert(1)</script><p>See <a href=\"https://example.com/\">this</a>.</p>",
/// );
/// assert_eq!(md, "# Hi\n\nSee [this](https://example.com/).");
///
/// let deep = format!("{}deep text{}", "<div>".repeat(100_000), "</div>".repeat(100_000));
/// let md = harnessx_builtin::web::html_to_markdown(&deep);
/// assert!(md.starts_with("deep text\n\n[nested too deeply: 99748 elements"), "{md}");
/// ```
pub fn html_to_markdown(html: &str) -> String {
    let Page { mut markdown, notes } = convert_html(html);
    for note in notes {
        if !markdown.is_empty() {
            markdown.push_str("\n\n");
        }
        markdown.push_str(&format!("[{note}]"));
    }
    markdown
}

/// A page as Markdown, and what the model must be told about the conversion (one line
/// each).
pub(super) struct Page {
    pub(super) markdown: String,
    pub(super) notes: Vec<String>,
}

/// The stack a conversion thread gets. htmd's walk recurses per DOM level, up to about
/// 5 KiB a level for tables in an unoptimised build; the bounded parse keeps the DOM
/// within [`parse::MAX_OPEN`] levels or a few more, so 16 MiB is several times what it
/// needs. Only the pages touched count against memory.
const CONVERSION_STACK: usize = 16 * 1024 * 1024;

/// A conversion thread: named, with [`CONVERSION_STACK`].
fn conversion_thread() -> std::thread::Builder {
    std::thread::Builder::new().name("harnessx-html".into()).stack_size(CONVERSION_STACK)
}

/// [`convert_here`] on a thread with [`CONVERSION_STACK`]; on the calling thread when no
/// thread can be started (the bounded depth fits the usual 2 MiB stacks of optimised
/// builds too). A panic in the converter gives an empty page that says so.
pub(super) fn convert_html(html: &str) -> Page {
    let joined = std::thread::scope(|scope| {
        let spawned = conversion_thread().spawn_scoped(scope, || convert_here(html));
        match spawned {
            Ok(handle) => handle.join(),
            Err(e) => {
                tracing::warn!(error = %e, "could not start a thread for the HTML conversion; converting here");
                std::panic::catch_unwind(|| convert_here(html))
            }
        }
    });
    joined.unwrap_or_else(|_| Page {
        markdown: String::new(),
        notes: vec!["the page could not be converted to Markdown".into()],
    })
}

/// Decodes and converts an HTML body off the async runtime, on a thread of its own: a
/// big page never stalls other tasks, and dropping the future (fetch_url's timeout) ends
/// the wait at once; the thread finishes its bounded work and its result is dropped.
pub(super) async fn convert_body(
    body: Vec<u8>,
    charset: Option<String>,
) -> Result<(Page, &'static str), String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    conversion_thread()
        .spawn(move || {
            let (html, encoding) = decode(&body, charset.as_deref(), true);
            drop(body);
            let _ = tx.send((convert_here(&html), encoding));
        })
        .map_err(|e| format!("could not start a thread to convert the page: {e}"))?;
    // A panic drops the sender: the page could not be converted.
    rx.await.map_err(|_| "the page could not be converted to Markdown".to_owned())
}

/// The conversion itself, on the calling thread: the bounded parse, htmd's walk over the
/// tree, blank lines squeezed.
fn convert_here(html: &str) -> Page {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "svg", "iframe", "head", "object", "canvas",
        ])
        .build();
    let parsed = parse::parse(html);
    let md = converter.tree_to_markdown(&parsed.document);
    let mut notes = Vec::new();
    if parsed.too_deep > 0 {
        notes.push(format!(
            "nested too deeply: {} elements deeper than {} levels were left out, their text kept in the element around them",
            parsed.too_deep,
            parse::MAX_OPEN
        ));
    }
    if parsed.budget_spent {
        notes.push(format!(
            "too many elements for a page of {} bytes (more than {}): past that point only the text is kept",
            html.len(),
            parse::element_budget(html.len())
        ));
    }
    Page { markdown: squeeze_blank_lines(md.trim()), notes }
}

fn squeeze_blank_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.truncate(out.trim_end().len());
    out
}

/// The first `max_chars` characters of `text`, cut at a clean boundary: the last paragraph
/// break in the second half of the window, else the last line break or space in its final
/// fifth, else exactly at `max_chars`. `None` when the whole text fits.
pub(super) fn truncate(text: &str, max_chars: usize) -> Option<&str> {
    let (end, _) = text.char_indices().nth(max_chars)?;
    let window = &text[..end];
    let byte_at = |chars: usize| text.char_indices().nth(chars).map_or(0, |(i, _)| i);
    let (half, fifth) = (byte_at(max_chars / 2), byte_at(max_chars - max_chars / 5));
    let cut = [("\n\n", half), ("\n", fifth), (" ", fifth)]
        .iter()
        .find_map(|(sep, floor)| window.rfind(sep).filter(|i| *i >= *floor && *i > 0))
        .unwrap_or(end);
    Some(window[..cut].trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_and_charsets() {
        assert_eq!(
            parse_content_type("Text/HTML; Charset=\"ISO-8859-1\""),
            ("text/html".into(), Some("ISO-8859-1".into()))
        );
        assert_eq!(kind_of("application/ld+json", b""), Kind::Text);
        assert_eq!(kind_of("image/png", b""), Kind::Other);
        assert_eq!(kind_of("", b"  <!DOCTYPE html><p>"), Kind::Html);
        assert_eq!(kind_of("", b"\x89PNG\r\n\x1a\n\0\0"), Kind::Other);
        assert_eq!(decode(b"caf\xe9", Some("iso-8859-1"), false).0, "café");
        assert_eq!(decode(b"caf\xe9", None, false), ("café".into(), "windows-1252"));
        let page = b"<html><head><meta charset=\"windows-1252\"></head><body>\x93hi\x94</body></html>";
        assert_eq!(decode(page, None, true).1, "windows-1252");
        let page = b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=koi8-r\">";
        assert_eq!(decode(page, None, true).1, "KOI8-R");
        assert_eq!(decode("\u{feff}é".as_bytes(), Some("latin1"), false).0, "é");
    }

    #[test]
    fn truncation_prefers_clean_boundaries() {
        assert_eq!(truncate("short", 10), None);
        assert_eq!(truncate("one two three four five", 15), Some("one two three"));
        assert_eq!(truncate("para one.\n\npara two is longer", 16), Some("para one."));
        assert_eq!(truncate("abcdefghijklmnop", 5), Some("abcde"));
        assert_eq!(truncate("ééééé", 3), Some("ééé"));
    }
}
