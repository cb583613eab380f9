//! The web page at `/`: three files built into the binary (no build step, no CDN), each
//! served with a Content-Security-Policy that lets no script run but the page's own, and
//! no inline script or style: nothing from a model or a tool can run as script in it (the
//! page builds every node with `textContent`).

use axum::Router;
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// What the page may load and run: its own script and style, requests to its own origin,
/// images from itself or `data:` URLs; nothing inline, no frames, no forms elsewhere.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const INDEX: &str = include_str!("../assets/index.html");
const SCRIPT: &str = include_str!("../assets/app.js");
const STYLE: &str = include_str!("../assets/app.css");

fn file(body: &'static str, content_type: &'static str) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The page's routes (served without the token: they hold no data; the page asks for
/// the token when the API answers 401).
pub(crate) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(|| async { file(INDEX, "text/html; charset=utf-8") }))
        .route("/assets/app.js", get(|| async { file(SCRIPT, "text/javascript; charset=utf-8") }))
        .route("/assets/app.css", get(|| async { file(STYLE, "text/css; charset=utf-8") }))
        // No icon: said plainly, so a browser does not log a 404 for it.
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
}
