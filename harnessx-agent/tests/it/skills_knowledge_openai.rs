//! Skills and knowledge over the OpenAI-compatible adapter and a loopback server: the
//! model opens a skill and then reads its reference file with the file tools; it searches
//! concepts, reads one and walks to its neighbours. Every request carries the same system
//! prompt, skills block included.

use crate::common;

use std::path::PathBuf;

use common::{Reply, Server};
use harnessx_agent::model::OpenAiModel;
use harnessx_agent::{Agent, AgentConfig, KnowledgeSource, SkillSource};
use serde_json::{Value, json};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A chat completion (not streamed) that calls one tool.
fn tool_call(id: &str, name: &str, args: Value) -> Reply {
    Reply::json(
        200,
        json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-4o",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}]
            }}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        })
        .to_string(),
    )
}

fn answer(text: &str) -> Reply {
    Reply::json(
        200,
        json!({
            "id": "chatcmpl-2", "object": "chat.completion", "created": 0, "model": "gpt-4o",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        })
        .to_string(),
    )
}

fn config() -> AgentConfig {
    AgentConfig { planning: false, stream: false, ..AgentConfig::default() }
}

#[tokio::test]
async fn openai_model_opens_a_skill_then_reads_its_reference_file() {
    let server = Server::start(vec![
        tool_call("call_1", "Skill", json!({"name": "pdf-forms"})),
        tool_call("call_2", "read_file", json!({"path": "skills/pdf-forms/reference/fields.md"})),
        answer("Run pdftk dump_data_fields first."),
    ]);
    let agent = Agent::builder()
        .model(OpenAiModel::new("gpt-4o").base_url(format!("{}/v1", server.url)).api_key("sk-test"))
        .system_prompt("You fill forms.")
        .builtin("filesystem", json!({"base_path": fixtures()}))
        .skills(SkillSource::dir(fixtures().join("skills")).shown_as("skills"))
        .config(config())
        .build()
        .unwrap();
    let result = agent.run("Fill in form.pdf").await.unwrap();
    assert_eq!(result.output, "Run pdftk dump_data_fields first.");

    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    let system = &bodies[0]["messages"][0];
    assert_eq!(system["role"], "system");
    let text = system["content"].as_str().unwrap();
    assert!(text.starts_with("You fill forms.\n\nSkills: "), "{text}");
    assert!(text.contains("\n- pdf-forms: Fill in PDF forms"), "{text}");
    for body in &bodies {
        assert_eq!(&body["messages"][0], system, "the system prompt is the same on every request");
    }
    let tools = harnessx_test_support::openai_tool_messages(&bodies[2]);
    assert_eq!(tools[0].0, "call_1");
    assert!(tools[0].1.starts_with("# Filling PDF forms"), "{}", tools[0].1);
    assert!(tools[0].1.contains("- skills/pdf-forms/reference/fields.md"), "{}", tools[0].1);
    assert_eq!(tools[1].0, "call_2");
    assert!(tools[1].1.contains("dump_data_fields"), "{}", tools[1].1);
}

#[tokio::test]
async fn openai_model_searches_reads_and_walks_the_knowledge_graph() {
    let server = Server::start(vec![
        tool_call(
            "call_1",
            "search_concepts",
            json!({"query": "what is left after a sun-like star dies", "limit": 3}),
        ),
        tool_call("call_2", "read_concept", json!({"id": "white-dwarf"})),
        tool_call("call_3", "get_neighbors", json!({"id": "white-dwarf", "direction": "in"})),
        answer("A white dwarf."),
    ]);
    let agent = Agent::builder()
        .model(OpenAiModel::new("gpt-4o").base_url(format!("{}/v1", server.url)).api_key("sk-test"))
        .knowledge(KnowledgeSource::dir(fixtures().join("knowledge")))
        .config(config())
        .build()
        .unwrap();
    let result = agent.run("What is left when the Sun dies?").await.unwrap();
    assert_eq!(result.output, "A white dwarf.");
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 4);
    let names: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search_concepts", "read_concept", "get_neighbors"]);
    let tools = harnessx_test_support::openai_tool_messages(&bodies[3]);
    assert!(tools[0].1.starts_with("1. white-dwarf — White dwarf: "), "{}", tools[0].1);
    assert!(
        tools[1].1.starts_with("# White dwarf\nid: white-dwarf\naliases: degenerate dwarf\n"),
        "{}",
        tools[1].1
    );
    assert_eq!(
        tools[2].1,
        "Links into white-dwarf (4):\n- chandrasekhar-limit — Chandrasekhar limit\n- hertzsprung-russell-diagram — Hertzsprung–Russell diagram\n- planetary-nebula — Planetary nebula\n- red-giant — Red giant"
    );
}
