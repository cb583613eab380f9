//! One argument mistake gives one text, whichever way the tool was written: a `#[tool]`
//! function on the shared fast path, an async `#[tool]` (its own closure), a `#[toolbox]`
//! method, `ToolHandler::typed_blocking` and `typed_async`, and a built-in (`read_file`).
//!
//! The engine validates arguments against the schema before any handler runs, so to reach
//! the decoders every handler is registered here under one name with a schema that admits
//! anything (`{"type": "object"}`): what the decoder then says is compared across kinds,
//! and with what the validator says for the same mistake under the real schema.

use std::sync::Arc;

use harnessx::{
    IntoToolDefinition, ToolCall, ToolHandler, ToolOptions, ToolRegistry, Toolbox, tool, toolbox,
};
use serde::Deserialize;
use serde_json::json;

/// Read a file (the arguments of the built-in `read_file`).
#[tool]
fn read_file(path: String, #[arg(default)] offset: u64, limit: Option<u64>) -> String {
    format!("{path} {offset} {limit:?}")
}

/// The same, async: a handler closure of its own rather than the shared fast path.
#[tool(name = "read_file")]
async fn read_file_async(path: String, #[arg(default)] offset: u64, limit: Option<u64>) -> String {
    format!("{path} {offset} {limit:?}")
}

struct Reader;

#[toolbox]
impl Reader {
    /// The same, as a method.
    #[tool(name = "read_file")]
    fn read(&self, path: String, #[arg(default)] offset: u64, limit: Option<u64>) -> String {
        format!("{path} {offset} {limit:?}")
    }
}

/// The same, as one struct (what the typed constructors and the built-in decode).
#[derive(Deserialize)]
struct ReadArgs {
    path: String,
    #[serde(default)]
    offset: u64,
    limit: Option<u64>,
}

fn builtin_read_file() -> ToolHandler {
    let registry = ToolRegistry::new();
    registry.load_builtin("read_file", json!({})).unwrap();
    registry.get_tool("read_file").unwrap().handler
}

/// Every kind of handler, each alone in a registry under the name `read_file`, with a
/// schema that lets any object through to the decoder.
fn permissive_registries() -> Vec<(&'static str, ToolRegistry)> {
    let handlers: Vec<(&'static str, ToolHandler)> = vec![
        ("#[tool] (shared fast path)", ReadFile.into_tool_definition().handler),
        ("#[tool] async (own closure)", ReadFileAsync.into_tool_definition().handler),
        ("#[toolbox] method", Arc::new(Reader).tool_definitions().remove(0).handler),
        (
            "typed_blocking",
            ToolHandler::typed_blocking(|a: ReadArgs| Ok::<_, String>(format!("{} {}", a.path, a.offset))),
        ),
        (
            "typed_async",
            ToolHandler::typed_async(|a: ReadArgs| async move {
                Ok::<_, String>(format!("{} {:?}", a.path, a.limit))
            }),
        ),
        ("built-in read_file", builtin_read_file()),
    ];
    handlers
        .into_iter()
        .map(|(kind, handler)| {
            let registry = ToolRegistry::new();
            registry
                .register_with_schema(
                    "read_file",
                    "Read.",
                    json!({"type": "object"}),
                    handler,
                    ToolOptions::new(),
                )
                .unwrap();
            (kind, registry)
        })
        .collect()
}

#[tokio::test]
async fn one_mistake_gives_one_text_through_every_kind_of_handler() {
    let cases = [
        (
            r#"{"path": "a.txt", "offset": "x", "limit": null}"#,
            r#"invalid arguments for read_file: offset: invalid type: string "x", expected u64"#,
        ),
        (
            r#"{"offset": 1, "limit": null}"#,
            r#"invalid arguments for read_file: "path" is a required property"#,
        ),
        (
            r#"{"path": "a.txt", "limit": -1}"#,
            "invalid arguments for read_file: limit: invalid value: integer `-1`, expected u64",
        ),
        (
            r#"{"path": ["a.txt"], "limit": null}"#,
            "invalid arguments for read_file: path: invalid type: sequence, expected a string",
        ),
    ];
    let registries = permissive_registries();
    assert_eq!(registries.len(), 6);
    for (args, expected) in cases {
        for (kind, registry) in &registries {
            let r = registry.execute(&ToolCall::new("c1", "read_file", args), None).await;
            assert!(r.is_error, "{kind} accepted {args}: {}", r.content);
            assert_eq!(r.content, expected, "{kind}, arguments {args}");
        }
    }
}

#[tokio::test]
async fn a_missing_argument_reads_the_same_from_the_validator_and_the_decoder() {
    // The real schemas: the validator catches the mistake before the decoder would.
    let registry = ToolRegistry::new();
    registry.register_tool(ReadFile).unwrap();
    let validated = registry.execute(&ToolCall::new("c1", "read_file", r#"{"limit": null}"#), None).await;
    let builtin = ToolRegistry::new();
    builtin.load_builtin("read_file", json!({})).unwrap();
    let builtin_validated = builtin.execute(&ToolCall::new("c1", "read_file", "{}"), None).await;
    let expected = r#"invalid arguments for read_file: "path" is a required property"#;
    assert_eq!(validated.content, expected);
    assert_eq!(builtin_validated.content, expected);
    for (kind, registry) in permissive_registries() {
        let decoded = registry.execute(&ToolCall::new("c1", "read_file", r#"{"limit": null}"#), None).await;
        assert_eq!(decoded.content, expected, "{kind}");
    }
}

#[tokio::test]
async fn good_arguments_still_decode_through_every_kind() {
    for (kind, registry) in permissive_registries() {
        let r =
            registry.execute(&ToolCall::new("c1", "read_file", r#"{"path": "", "limit": 3}"#), None).await;
        // The built-in fails on the empty path itself, after decoding: not an argument error.
        assert!(!r.content.starts_with("invalid arguments"), "{kind}: {}", r.content);
    }
}
