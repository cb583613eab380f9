//! `fetch_url` on images over a loopback server: an image part for a real image, the
//! declared type checked against the content, SVG kept as text, and images over the
//! download limit refused whole.

use std::sync::Arc;

use harnessx_core::ToolResult;
use harnessx_core::content::Blob;
use serde_json::json;

use crate::fs_media::{jpeg, png};
use crate::web::{Part, Route, call, local, registry_with, reply, serve};

const HTML: &[u8] = b"<html><script>alert(1)</script></html>";
const SVG: &[u8] = b"<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>";

fn site() -> Route {
    Arc::new(|path: &str, _port: u16| match path {
        "/png" => reply("200 OK", &[("Content-Type", "image/png")], &png(3, 2)),
        "/jpeg-as-png" => reply("200 OK", &[("Content-Type", "image/png")], &jpeg()),
        "/html-as-png" => reply("200 OK", &[("Content-Type", "image/png")], HTML),
        "/octet" => reply("200 OK", &[("Content-Type", "application/octet-stream")], &png(1, 1)),
        "/untyped" => reply("200 OK", &[], &png(1, 1)),
        "/gif-text" => reply("200 OK", &[("Content-Type", "text/plain")], b"GIF89a is a format from 1989."),
        "/svg" => reply("200 OK", &[("Content-Type", "image/svg+xml")], SVG),
        "/garbage-png" => {
            let mut body = b"\x89PNG\r\n\x1a\n".to_vec();
            body.extend((0..500u32).map(|i| (i * 7919 % 251) as u8));
            reply("200 OK", &[("Content-Type", "image/png")], &body)
        }
        "/bomb-png" => reply("200 OK", &[("Content-Type", "image/png")], &crate::fs_media::png_bomb()),
        "/big-png" => reply("200 OK", &[("Content-Type", "image/png")], &padded_png()),
        "/big-png-unsized" => {
            // No Content-Length: the body runs to the end of the connection.
            let mut bytes =
                b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nConnection: close\r\n\r\n".to_vec();
            bytes.extend(padded_png());
            vec![Part::Bytes(bytes)]
        }
        _ => reply("404 Not Found", &[], b""),
    })
}

/// A valid PNG of 400 bytes (padding after its last chunk).
fn padded_png() -> Vec<u8> {
    let mut body = png(2, 2);
    body.resize(400, 0);
    body
}

fn image(result: &ToolResult) -> (&str, &[u8]) {
    assert!(!result.is_error, "{}", result.content);
    let [part] = &result.parts[..] else { panic!("one part expected: {:?}", result.parts) };
    assert_eq!(part.kind(), "image");
    let Some(Blob::Bytes(bytes)) = part.blob() else { panic!("bytes expected: {part:?}") };
    (part.media_type().unwrap(), bytes)
}

#[tokio::test]
async fn an_image_response_is_an_image_part() {
    let port = serve(site()).await;
    let registry = registry_with(local());
    let url = format!("http://127.0.0.1:{port}/png");
    let result = call(&registry, json!({ "url": url })).await;
    let expected = png(3, 2);
    assert_eq!(image(&result), ("image/png", &expected[..]));
    assert_eq!(result.content, format!("[image: image/png, {} bytes] {url}", expected.len()));
    let structured = result.structured_content.unwrap();
    assert_eq!((structured["width"].as_u64(), structured["height"].as_u64()), (Some(3), Some(2)));
    // No declared type, or a generic binary one: the content says it is an image.
    for path in ["/octet", "/untyped"] {
        let result = call(&registry, json!({"url": format!("http://127.0.0.1:{port}{path}")})).await;
        assert_eq!(image(&result).0, "image/png", "{path}");
    }
}

#[tokio::test]
async fn a_content_type_that_lies_is_refused_or_read_as_what_it_is() {
    let port = serve(site()).await;
    let registry = registry_with(local());
    // Said PNG, is JPEG: an image of the type it really is.
    let url = format!("http://127.0.0.1:{port}/jpeg-as-png");
    let result = call(&registry, json!({ "url": url })).await;
    assert_eq!(image(&result).0, "image/jpeg");
    assert_eq!(
        result.content,
        format!("[image: image/jpeg, {} bytes] {url} (served as image/png)", jpeg().len())
    );
    // Said PNG, is HTML: refused.
    let url = format!("http://127.0.0.1:{port}/html-as-png");
    let result = call(&registry, json!({ "url": url })).await;
    assert!(result.is_error && result.parts.is_empty());
    assert_eq!(
        result.content,
        format!(
            "refused: {url} says it is image/png but its content is not an image ({} bytes); it is not returned",
            HTML.len()
        )
    );
    // Said PNG, a PNG signature on garbage: refused.
    let url = format!("http://127.0.0.1:{port}/garbage-png");
    let result = call(&registry, json!({ "url": url })).await;
    assert_eq!(
        result.content,
        format!(
            "refused: {url} starts like image/png but its header is not a valid image header; it is not read"
        )
    );
    // A header claiming 100,000 x 100,000 pixels: refused, nothing decoded.
    let url = format!("http://127.0.0.1:{port}/bomb-png");
    let result = call(&registry, json!({ "url": url })).await;
    assert_eq!(
        result.content,
        format!(
            "refused: {url} is image/png of 100000x100000 pixels, outside the limits (1 to 50000 pixels a side, 100000000 in all); it is not read"
        )
    );
    // Said text, starts like a GIF: text, as it said.
    let result = call(&registry, json!({"url": format!("http://127.0.0.1:{port}/gif-text")})).await;
    assert!(!result.is_error && result.parts.is_empty(), "{result:?}");
    assert_eq!(result.content, "GIF89a is a format from 1989.");
}

#[tokio::test]
async fn an_svg_is_text_never_an_image() {
    let port = serve(site()).await;
    let result = call(&registry_with(local()), json!({"url": format!("http://127.0.0.1:{port}/svg")})).await;
    assert!(!result.is_error, "{}", result.content);
    assert!(result.parts.is_empty(), "an SVG became a part: {:?}", result.parts);
    assert_eq!(result.content.as_bytes(), SVG);
}

#[tokio::test]
async fn an_image_over_the_download_limit_is_refused_not_cut() {
    let port = serve(site()).await;
    let registry = registry_with(local().max_bytes(100));
    // Content-Length says so: refused before the download.
    let url = format!("http://127.0.0.1:{port}/big-png");
    let result = call(&registry, json!({ "url": url })).await;
    assert!(result.is_error && result.parts.is_empty());
    assert_eq!(
        result.content,
        format!(
            "refused: {url} is image/png of 400 bytes, over the 100 byte download limit; it is not returned"
        )
    );
    // No length given: refused when the download reaches the limit.
    let url = format!("http://127.0.0.1:{port}/big-png-unsized");
    let result = call(&registry, json!({ "url": url })).await;
    assert!(result.is_error && result.parts.is_empty());
    assert_eq!(
        result.content,
        format!(
            "refused: {url} is image/png of more than 100 bytes, over the 100 byte download limit; it is not returned"
        )
    );
    // Within a limit as large as the image, it comes back whole.
    let registry = registry_with(local().max_bytes(400));
    let result = call(&registry, json!({"url": format!("http://127.0.0.1:{port}/big-png")})).await;
    assert_eq!(image(&result).1, &padded_png()[..]);
}
