//! Tools that return media: `Image`, `File` and `Content`, plain, in a `Result` and
//! from a toolbox method, reach the result as parts with a line naming each in the text.

use std::sync::Arc;

use harnessx_macros::{tool, toolbox};
use hx::content::{Content, File, Image, Part};
use hx::{ToolCall, ToolRegistry};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0";

/// Draws a chart.
///
/// Args:
///     title: The chart's title.
#[tool(crate = hx, permission = "allow", replay_policy = "safe")]
fn chart(title: String) -> Content {
    Content::new().text(format!("chart: {title}")).image(Image::png(PNG))
}

/// Takes a screenshot.
///
/// Args:
///     broken: Fail instead.
#[tool(crate = hx, permission = "allow", replay_policy = "safe")]
async fn screenshot(broken: bool) -> Result<Image, String> {
    if broken { Err("the screen is off".into()) } else { Ok(Image::sniffed(PNG).expect("a PNG")) }
}

struct Reports;

#[toolbox(crate = hx)]
impl Reports {
    /// Exports the report as a PDF.
    #[tool(permission = "allow", replay_policy = "safe")]
    fn export(&self) -> File {
        File::pdf("report.pdf", &b"%PDF-1.7\n%%EOF"[..])
    }
}

#[tokio::test]
async fn tools_returning_media_give_parts_and_a_line_for_each() {
    let registry = ToolRegistry::new();
    registry.register_tool(Chart).unwrap();
    registry.register_tool(Screenshot).unwrap();
    registry.register_toolbox(Arc::new(Reports)).unwrap();

    let r = registry.execute(&ToolCall::new("1", "chart", r#"{"title":"sales"}"#), None).await;
    assert!(!r.is_error, "{}", r.content);
    assert_eq!(r.content, format!("chart: sales\n[image: image/png, {} bytes]", PNG.len()));
    assert_eq!(&r.parts[..], &[Part::image("image/png", PNG)]);

    let r = registry.execute(&ToolCall::new("2", "screenshot", r#"{"broken":false}"#), None).await;
    assert_eq!(r.content, format!("[image: image/png, {} bytes]", PNG.len()));
    assert_eq!(r.parts.len(), 1);
    let r = registry.execute(&ToolCall::new("3", "screenshot", r#"{"broken":true}"#), None).await;
    assert!(r.is_error);
    assert_eq!(r.content, "the screen is off");
    assert!(r.parts.is_empty());

    let r = registry.execute(&ToolCall::new("4", "export", "{}"), None).await;
    assert_eq!(r.content, "[file report.pdf: application/pdf, 14 bytes]");
    assert_eq!(r.parts[0].media_type(), Some("application/pdf"));
}
