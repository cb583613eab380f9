//! Skills and knowledge on one agent, with the fixture folders of harnessx-agent's tests:
//! a Claude Code skills folder and 54 astronomy concepts. A scripted model opens a skill,
//! reads its reference file with the file tools, then searches the concepts, reads one and
//! walks to its neighbours.
//!
//! `cargo run --example agent_skills_knowledge`

use std::path::PathBuf;
use std::sync::Mutex;

use harnessx::ToolCall;
use harnessx::agent::{Agent, AgentConfig, KnowledgeSource, SkillSource};
use harnessx::model::{FunctionModel, Message, ModelResponse};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("harnessx-agent/tests/fixtures");
    let script = Mutex::new(
        vec![
            ("Skill", json!({"name": "pdf-forms"})),
            ("read_file", json!({"path": "skills/pdf-forms/reference/fields.md"})),
            ("search_concepts", json!({"query": "what is left after a sun-like star dies", "limit": 3})),
            ("read_concept", json!({"id": "white-dwarf"})),
            ("get_neighbors", json!({"id": "white-dwarf", "direction": "in"})),
        ]
        .into_iter()
        .enumerate(),
    );
    let model = FunctionModel::new(move |_request| {
        Ok(match script.lock().unwrap().next() {
            Some((i, (name, args))) => {
                ModelResponse::tool_calls(vec![ToolCall::new(format!("c{i}"), name, args.to_string())])
            }
            None => ModelResponse::text("Done."),
        })
    });
    let agent = Agent::builder()
        .model(model)
        .system_prompt("You help with forms and astronomy.")
        .builtin("filesystem", json!({"base_path": fixtures}))
        .skills(SkillSource::dir(fixtures.join("skills")).shown_as("skills"))
        .knowledge(KnowledgeSource::dir(fixtures.join("knowledge")))
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap();
    println!("--- system prompt ---\n{}\n", agent.effective_system_prompt().unwrap());
    let knowledge = agent.knowledge().unwrap();
    println!("{} concepts, {} broken links\n", knowledge.len(), knowledge.broken_links().len());

    let result = agent.run("Fill in form.pdf, then tell me what a dying Sun leaves.").await.unwrap();
    for message in &result.messages {
        if let Message::Tool { name, content, .. } = message {
            println!("--- {name} ---\n{content}\n");
        }
    }
    println!("answer: {}", result.output);
}
