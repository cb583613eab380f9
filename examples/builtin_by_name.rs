//! Constructor built-in name: the spec's `Agent(tools=["read_file"])`. A `&str` given to
//! the agent builder resolves through the built-in catalog, so the handler is never
//! imported. A scripted model calls it, and the agent answers with what it read.
//!
//! `cargo run --example builtin_by_name`

use harnessx::agent::{Agent, AgentConfig};
use harnessx::model::{FunctionModel, Message, ModelResponse};
use harnessx::{ToolCall, catalog::BuiltinOptions};

#[tokio::main]
async fn main() {
    let workspace = std::env::temp_dir().join(format!("hx-example-by-name-{}", std::process::id()));
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("notes.txt"), "first line\nsecond line\n").unwrap();

    // The model reads notes.txt, then repeats the first line it got back.
    let model = FunctionModel::new(|request| {
        Ok(match request.messages.last() {
            Some(Message::Tool { content, .. }) => {
                ModelResponse::text(format!("The notes say: {}", content.lines().next().unwrap_or("")))
            }
            _ => ModelResponse::tool_calls(vec![ToolCall::new(
                "1",
                "read_file",
                r#"{"path": "notes.txt", "limit": 1}"#,
            )]),
        })
    });
    let agent = Agent::builder()
        .model(model)
        .tool("read_file") // the spec's Agent(tools=["read_file"]), host access under process permissions
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap();
    assert_eq!(agent.tools().tool_names(), ["read_file"]);

    // The same name with the bundle helper's options, confined to a root.
    let contained = Agent::builder()
        .model(FunctionModel::new(|_| Ok(ModelResponse::text("unused"))))
        .builtin("read_file", BuiltinOptions::new().set("base_path", workspace.to_str().unwrap()))
        .build()
        .unwrap();
    let result = contained
        .tools()
        .execute(&ToolCall::new("1", "read_file", r#"{"path": "notes.txt", "limit": 1}"#), None)
        .await;
    println!("{}", result.content.trim_end());
    let run = contained.run("unused").await.unwrap();
    assert_eq!(run.output, "unused");

    std::env::set_current_dir(&workspace).unwrap();
    let run = agent.run("What do my notes say?").await.unwrap();
    println!("{}", run.output);
    assert!(run.output.starts_with("The notes say:      1\tfirst line"));

    // An unknown name lists the known ones.
    let err = Agent::builder().tool("read_files").build().unwrap_err();
    println!("{err}");

    std::fs::remove_dir_all(&workspace).unwrap();
}
