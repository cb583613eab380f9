//! A compaction in a durable run is a journaled step: a run that crashed after its
//! history was summarised resumes with the same summary, never asking for a new one; a
//! provider's context-length refusal is journaled too, so a resume compacts the same way.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use harnessx_agent::model::{FunctionModel, Message, ModelError, ModelResponse};
use harnessx_agent::{Agent, AgentConfig, ContextPolicy};
use harnessx_core::{ReplayPolicy, ToolCall, ToolDefinition, ToolHandler};
use harnessx_durable::{AgentRuntime, Entry, JournalStore, RunStatus, SqliteJournal};
use serde_json::json;

const PAGES: u64 = 9;

#[derive(Default)]
struct World {
    summaries: AtomicUsize,
    /// Page 7's fetch hangs the first time (the "crash").
    hung: AtomicBool,
    /// Refuse the first request whose history holds page 3 as too large (once).
    refused: AtomicBool,
}

fn fetch(world: &Arc<World>) -> ToolDefinition {
    let w = world.clone();
    ToolDefinition::new(
        "fetch",
        "Fetches a page.",
        json!({"type": "object", "properties": {"page": {"type": "integer"}}}),
        ToolHandler::from_async(move |args, _| {
            let w = w.clone();
            async move {
                let page = args["page"].as_u64().unwrap_or_default();
                if page == 7 && !w.hung.swap(true, Ordering::SeqCst) {
                    std::future::pending::<()>().await;
                }
                Ok(format!("page {page}: {}", "lorem ipsum dolor sit amet ".repeat(120)).into())
            }
        }),
    )
    .with_replay_policy(ReplayPolicy::Safe)
}

/// Calls `fetch` for the page after the newest one called, until [`PAGES`]; answers
/// every summarising request with a numbered summary (a new one each time it is asked).
fn agent(world: &Arc<World>, refuse: bool) -> Agent {
    let w = world.clone();
    let model = FunctionModel::new(move |request| {
        if request.system.as_deref().is_some_and(|s| s.starts_with("You compact")) {
            let n = w.summaries.fetch_add(1, Ordering::SeqCst) + 1;
            return Ok(ModelResponse::text(format!("SUMMARY-{n}")));
        }
        let last = request.messages.iter().rev().find_map(|m| match m {
            Message::Assistant { tool_calls, .. } => tool_calls.first().cloned(),
            _ => None,
        });
        let page = last.map_or(0, |c| {
            serde_json::from_str::<serde_json::Value>(&c.arguments).unwrap()["page"].as_u64().unwrap()
        });
        if refuse && page == 3 && !w.refused.swap(true, Ordering::SeqCst) {
            return Err(ModelError::ContextWindow {
                message: "prompt is too long: 3400 tokens > 3000 maximum".into(),
                limit: Some(3_000),
                requested: Some(3_400),
            });
        }
        if page >= PAGES {
            let summaries: Vec<&str> = request
                .messages
                .iter()
                .filter_map(|m| m.content().lines().nth(1).filter(|l| l.starts_with("SUMMARY-")))
                .collect();
            return Ok(ModelResponse::text(format!("done with {}", summaries.join(","))));
        }
        let next = page + 1;
        Ok(ModelResponse::tool_calls(vec![ToolCall::new(
            format!("c{next}"),
            "fetch",
            format!("{{\"page\": {next}}}"),
        )]))
    });
    let config = AgentConfig {
        planning: false,
        context: ContextPolicy {
            window: Some(if refuse { 100_000 } else { 3_000 }),
            keep_turns: 2,
            ..ContextPolicy::default()
        },
        ..AgentConfig::default()
    };
    Agent::builder().model(model).tool(fetch(world)).config(config).build().unwrap()
}

fn compactions(journal: &SqliteJournal, run: &str) -> Vec<(u32, u32, String)> {
    let (_, entries) = journal.load_run(run).unwrap().unwrap();
    entries
        .into_iter()
        .filter_map(|e| match e.entry {
            Entry::Compaction { turn, attempt, response } => {
                Some((turn, attempt, response["content"].as_str().unwrap_or_default().to_owned()))
            }
            _ => None,
        })
        .collect()
}

/// Starts `run`, lets it go until page 7's fetch hangs, then drops it ("kills the process").
async fn crash(runtime: &AgentRuntime, run: &str) {
    let started = runtime.start(run, "Read every page.");
    let crashed = tokio::time::timeout(Duration::from_millis(1500), started).await;
    assert!(crashed.is_err(), "the run stops at page 7's hanging fetch: {crashed:?}");
}

#[tokio::test]
async fn a_resume_replays_the_journaled_summary_and_never_asks_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let world = Arc::new(World::default());
    crash(&AgentRuntime::new(agent(&world, false), Arc::new(SqliteJournal::open(&path).unwrap())), "r").await;
    let journal = SqliteJournal::open(&path).unwrap();
    let before = compactions(&journal, "r");
    assert!(!before.is_empty(), "compacted before the crash");
    let asked = world.summaries.load(Ordering::SeqCst);
    assert_eq!(asked, before.len(), "every summary asked for was journaled");

    // A new process: same agent, same journal.
    let runtime = AgentRuntime::new(agent(&world, false), Arc::new(SqliteJournal::open(&path).unwrap()));
    let result = runtime.resume("r").await.unwrap();
    assert_eq!(runtime.status("r").unwrap().run.status, RunStatus::Completed);
    let after = compactions(&journal, "r");
    assert_eq!(&after[..before.len()], &before[..], "the journaled summaries stay as they were");
    assert_eq!(
        world.summaries.load(Ordering::SeqCst) - asked,
        after.len() - before.len(),
        "the resume asked only for the compactions after the crash, never one it had"
    );
    // The final request carries the summary the journal holds (the newest one).
    let newest = &after.last().unwrap().2;
    assert!(result.output.contains(newest.as_str()), "{} vs {newest}", result.output);
}

#[tokio::test]
async fn a_journaled_refusal_is_replayed_so_the_resume_compacts_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let world = Arc::new(World::default());
    crash(&AgentRuntime::new(agent(&world, true), Arc::new(SqliteJournal::open(&path).unwrap())), "o").await;
    let journal = SqliteJournal::open(&path).unwrap();
    let (_, entries) = journal.load_run("o").unwrap().unwrap();
    let overflow = entries.iter().find_map(|e| match &e.entry {
        Entry::ContextOverflow { turn, limit, .. } => Some((*turn, *limit)),
        _ => None,
    });
    assert_eq!(overflow, Some((4, Some(3_000))), "the refusal of turn 4 is journaled");
    let before = compactions(&journal, "o");
    assert_eq!(before.iter().map(|c| (c.0, c.1)).next(), Some((4, 1)), "then its compaction: {before:?}");
    let asked = world.summaries.load(Ordering::SeqCst);

    let runtime = AgentRuntime::new(agent(&world, true), Arc::new(SqliteJournal::open(&path).unwrap()));
    let result = runtime.resume("o").await.unwrap();
    let after = compactions(&journal, "o");
    assert_eq!(&after[..before.len()], &before[..]);
    assert_eq!(world.summaries.load(Ordering::SeqCst) - asked, after.len() - before.len());
    assert!(result.output.starts_with("done with SUMMARY-"), "{}", result.output);
}

#[tokio::test]
async fn a_resume_with_other_context_settings_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let world = Arc::new(World::default());
    crash(&AgentRuntime::new(agent(&world, false), Arc::new(SqliteJournal::open(&path).unwrap())), "w").await;
    // The same agent with another window would compact elsewhere: refused.
    let other = agent(&world, true);
    let err = AgentRuntime::new(other, Arc::new(SqliteJournal::open(&path).unwrap()))
        .resume("w")
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("context window 3000") && text.contains("context window 100000"), "{text}");
}
