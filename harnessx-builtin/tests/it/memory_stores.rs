//! The memory tools over every store: one set of cases, instantiated per store by
//! `store_cases!`, each run through the registry's pipeline as the model would call them.

use std::sync::Arc;

use harnessx_builtin::memory::{InMemoryStore, MemoryOptions, SqliteStore, register_memory_tools};
use harnessx_core::{MemoryStore, ToolCall, ToolRegistry, ToolResult};
use serde_json::{Value, json};

/// A store, and the directory its file lives in (if any), kept for the test's length.
struct Fixture {
    store: Arc<dyn MemoryStore>,
    _dir: Option<tempfile::TempDir>,
}

impl Fixture {
    fn in_memory() -> Self {
        Self { store: Arc::new(InMemoryStore::new()), _dir: None }
    }

    fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("memories.db")).unwrap();
        Self { store: Arc::new(store), _dir: Some(dir) }
    }

    /// A registry with every memory tool over this store, in `namespace`.
    fn registry(&self, namespace: &str) -> ToolRegistry {
        let registry = ToolRegistry::new();
        let options = MemoryOptions {
            store: Some(self.store.clone()),
            namespace: namespace.into(),
            ..Default::default()
        };
        register_memory_tools(&registry, options).unwrap();
        registry
    }
}

/// Calls `tool` with `args` through the pipeline.
async fn call(registry: &ToolRegistry, tool: &str, args: Value) -> ToolResult {
    registry.execute(&ToolCall::new("c", tool, args.to_string()), None).await
}

/// Calls `tool` and returns its structured content, failing on an error result.
async fn ok(registry: &ToolRegistry, tool: &str, args: Value) -> Value {
    let result = call(registry, tool, args).await;
    assert!(!result.is_error, "{tool}: {}", result.content);
    result.structured_content.expect("memory results carry structured content")
}

/// Saves `text` and returns its id.
async fn save(registry: &ToolRegistry, text: &str) -> String {
    ok(registry, "save_memory", json!({ "text": text })).await["id"].as_str().unwrap().to_owned()
}

/// The ids of a search's hits, best first.
async fn search_ids(registry: &ToolRegistry, query: &str, limit: usize) -> Vec<String> {
    let found = ok(registry, "search_memories", json!({ "query": query, "limit": limit })).await;
    found["hits"].as_array().unwrap().iter().map(|h| h["id"].as_str().unwrap().to_owned()).collect()
}

/// Twenty memories of one user, and questions about them worded differently from the
/// memory they are about (other forms of the words, other words around them).
const FIXTURE: [&str; 20] = [
    "Emma, the user's daughter, has a severe peanut allergy.",
    "The user prefers dark mode in every editor and terminal.",
    "Deployments to production happen on Tuesdays after the standup meeting.",
    "The staging database password rotates every 30 days.",
    "The user runs 10 kilometres every Saturday morning.",
    "Invoices are sent to the finance team at the end of each month.",
    "The user's favourite programming language is Rust; they dislike Java.",
    "The office wifi network is called harbor-guest.",
    "The user is learning Japanese and practises kanji daily.",
    "Code reviews need two approvals before merging to main.",
    "The cat, Miso, needs her medication twice a day.",
    "Flights should be booked with aisle seats whenever possible.",
    "The quarterly planning meeting moved from Monday to Thursday.",
    "The user's dentist appointment is on the 14th at 9am.",
    "Backups of the analytics cluster run nightly at 2am.",
    "The user drinks green tea, never coffee after noon.",
    "The README must be updated whenever the public API changes.",
    "The user's partner, Sam, is a vegetarian.",
    "Team lunches are ordered from the Thai place on Fridays.",
    "Error budgets are reviewed in the monthly reliability review.",
];

/// (question, index in [`FIXTURE`] of the memory it is about).
const QUESTIONS: [(&str, usize); 14] = [
    ("Does anyone in the family have food allergies?", 0),
    ("dark theme for editors", 1),
    ("which day do deployments go out", 2),
    ("how often does the password rotate", 3),
    ("is the user running on weekends", 4),
    ("who receives the invoice", 5),
    ("what languages does the user like to program in", 6),
    ("how many approvals does a merge need", 9),
    ("when should Miso get her medicine", 10),
    ("seat to pick when booking a flight", 11),
    ("what drink does the user want in the afternoon", 15),
    ("docs updates when the API changed", 16),
    ("where is the team lunch ordered from", 18),
    ("reliability reviews", 19),
];

macro_rules! store_cases {
    ($store:ident, $make:expr) => {
        mod $store {
            use super::*;

            fn fixture() -> Fixture {
                $make
            }

            #[tokio::test]
            async fn save_read_update_delete_round_trip_with_ids_in_results() {
                let fx = fixture();
                let reg = fx.registry("alice");
                let saved = call(&reg, "save_memory", json!({"text": "Alice lives in Lyon", "tags": ["home", " ", "home"]})).await;
                assert!(!saved.is_error, "{}", saved.content);
                let id = saved.structured_content.as_ref().unwrap()["id"].as_str().unwrap().to_owned();
                assert_eq!(saved.content, format!("Saved memory {id}."));
                assert_eq!(saved.structured_content.as_ref().unwrap()["tags"], json!(["home"]), "tags trimmed and deduplicated");

                let read = call(&reg, "read_memory", json!({"id": id})).await;
                assert!(read.content.starts_with(&format!("Memory {id}, saved ")), "{}", read.content);
                assert!(read.content.ends_with(", tags: home\nAlice lives in Lyon"), "{}", read.content);
                // The model may write the id as a number.
                let numeric: u64 = id.parse().unwrap();
                assert_eq!(ok(&reg, "read_memory", json!({"id": numeric})).await["text"], "Alice lives in Lyon");

                let updated = call(&reg, "update_memory", json!({"id": id, "text": "Alice moved to Lille"})).await;
                assert_eq!(updated.content, format!("Updated memory {id}."));
                let after = ok(&reg, "read_memory", json!({"id": id})).await;
                assert_eq!((&after["text"], &after["tags"]), (&json!("Alice moved to Lille"), &json!(["home"])));
                ok(&reg, "update_memory", json!({"id": id, "tags": ["city"]})).await;
                assert_eq!(ok(&reg, "read_memory", json!({"id": id})).await["tags"], json!(["city"]));
                assert_eq!(search_ids(&reg, "where does she live now? Lille", 5).await, [id.as_str()]);

                let deleted = call(&reg, "delete_memory", json!({"id": id})).await;
                assert_eq!(deleted.content, format!("Deleted memory {id}."));
                let gone = call(&reg, "read_memory", json!({"id": id})).await;
                assert!(gone.is_error);
                assert_eq!(gone.content, format!("no memory with id {id}; search_memories or list_memories shows the ids that exist"));
                assert!(search_ids(&reg, "Lille", 5).await.is_empty());
                // Ids are not reused after a delete.
                let next = save(&reg, "Something else").await;
                assert_ne!(next, id);
            }

            #[tokio::test]
            async fn a_key_keeps_one_memory_per_topic() {
                let fx = fixture();
                let reg = fx.registry("alice");
                let first = ok(&reg, "save_memory", json!({"text": "Coffee: flat white", "key": "coffee order"})).await;
                let again = call(&reg, "save_memory", json!({"text": "Coffee: oat cortado", "key": "coffee order", "tags": ["drinks"]})).await;
                let id = first["id"].as_str().unwrap();
                assert_eq!(again.content, format!("Saved memory {id} (key \"coffee order\"), replacing what was saved under that key."));
                assert_eq!(again.structured_content.as_ref().unwrap()["replaced"], true);
                let listed = ok(&reg, "list_memories", json!({})).await;
                assert_eq!(listed["memories"].as_array().unwrap().len(), 1);
                assert_eq!(listed["memories"][0]["text"], "Coffee: oat cortado");
                // The key is searched too.
                assert_eq!(search_ids(&reg, "order", 5).await, [id.to_owned()]);
                // The same key in another namespace is another memory.
                let other = ok(&fx.registry("bob"), "save_memory", json!({"text": "Coffee: espresso", "key": "coffee order"})).await;
                assert_eq!(other["replaced"], false);
                assert_ne!(other["id"], first["id"]);
            }

            #[tokio::test]
            async fn namespaces_do_not_see_each_other() {
                let fx = fixture();
                let (alice, bob) = (fx.registry("alice"), fx.registry("bob"));
                let id = save(&alice, "Alice's locker code is 4512").await;
                save(&bob, "Bob's locker is number 7").await;
                assert_eq!(search_ids(&alice, "locker", 10).await, [id.as_str()]);
                assert_eq!(search_ids(&bob, "locker", 10).await.len(), 1);
                for tool in ["read_memory", "delete_memory"] {
                    let r = call(&bob, tool, json!({"id": id})).await;
                    assert!(r.is_error && r.content.starts_with("no memory with id"), "{tool}: {}", r.content);
                }
                let r = call(&bob, "update_memory", json!({"id": id, "text": "hijacked"})).await;
                assert!(r.is_error, "{}", r.content);
                assert_eq!(ok(&alice, "read_memory", json!({"id": id})).await["text"], "Alice's locker code is 4512");
                assert_eq!(ok(&fx.registry("carol"), "list_memories", json!({})).await["memories"], json!([]));
            }

            #[tokio::test]
            async fn list_is_newest_first_and_limited() {
                let fx = fixture();
                let reg = fx.registry("alice");
                let empty = call(&reg, "list_memories", json!({})).await;
                assert_eq!(empty.content, "No memories are saved yet.");
                let mut ids = Vec::new();
                for i in 0..12 {
                    ids.push(save(&reg, &format!("memory number {i}")).await);
                }
                let listed = call(&reg, "list_memories", json!({"limit": 3})).await;
                let expected = format!(
                    "The 3 most recent memories, newest first (ids in brackets; read_memory shows one whole):\n- [{}] memory number 11\n- [{}] memory number 10\n- [{}] memory number 9",
                    ids[11], ids[10], ids[9]
                );
                assert_eq!(listed.content, expected);
                let default = ok(&reg, "list_memories", json!({})).await;
                assert_eq!(default["memories"].as_array().unwrap().len(), 10);
                // An update makes a memory the most recent.
                std::thread::sleep(std::time::Duration::from_millis(5));
                ok(&reg, "update_memory", json!({"id": ids[0], "tags": ["bumped"]})).await;
                let listed = ok(&reg, "list_memories", json!({"limit": 1})).await;
                assert_eq!(listed["memories"][0]["id"].as_str(), Some(ids[0].as_str()));
            }

            #[tokio::test]
            async fn paraphrased_questions_find_the_right_memory_first() {
                let fx = fixture();
                let reg = fx.registry("user");
                let mut ids = Vec::new();
                for text in FIXTURE {
                    ids.push(save(&reg, text).await);
                }
                // Noise in another namespace must not disturb the ranking.
                let other = fx.registry("other");
                for text in FIXTURE {
                    save(&other, text).await;
                }
                let mut misses = Vec::new();
                for (question, expected) in QUESTIONS {
                    let got = search_ids(&reg, question, 3).await;
                    if got.first() != Some(&ids[expected]) {
                        let texts: Vec<&str> = got.iter().map(|id| FIXTURE[ids.iter().position(|i| i == id).unwrap()]).collect();
                        misses.push(format!("{question:?}: wanted {:?}, got {texts:?}", FIXTURE[expected]));
                    }
                }
                assert!(misses.is_empty(), "{} of {} questions missed:\n{}", misses.len(), QUESTIONS.len(), misses.join("\n"));
                let result = call(&reg, "search_memories", json!({"query": "peanut"})).await;
                assert_eq!(
                    result.content,
                    format!("1 memory matches, best first (ids in brackets; read_memory shows one whole):\n- [{}] {}", ids[0], FIXTURE[0])
                );
                let hit = &result.structured_content.unwrap()["hits"][0];
                assert!(hit["score"].as_f64().unwrap() > 0.0, "{hit}");
            }

            #[tokio::test]
            async fn hostile_queries_are_plain_words() {
                let fx = fixture();
                let reg = fx.registry("alice");
                let id = save(&reg, "The foo service talks to the bar service over NEAR-real-time queues").await;
                for query in [
                    "\"foo", "AND OR", "NOT", "foo AND", "(foo", "foo)", "foo*", "*", "^foo", "text:foo", "-foo",
                    "+foo", "NEAR(foo bar)", "foo\"bar", "'; DROP TABLE memories; --", "\\", "{}", "\u{0}foo",
                    "  ", "…", "🦀 foo",
                ] {
                    let r = call(&reg, "search_memories", json!({"query": query})).await;
                    assert!(!r.is_error, "{query:?}: {}", r.content);
                    let hits = r.structured_content.unwrap()["hits"].as_array().unwrap().len();
                    let expect_hit = query.to_lowercase().contains("foo") || query.contains("NEAR");
                    assert_eq!(hits, usize::from(expect_hit), "{query:?}");
                }
                let none = call(&reg, "search_memories", json!({"query": "zebra"})).await;
                assert_eq!(none.content, "No memory matches. Try other words, or list_memories to see the most recent ones.");
                // Still there, and still found.
                assert_eq!(search_ids(&reg, "queues", 5).await, [id]);
            }

            #[tokio::test]
            async fn mistakes_get_one_line_a_model_can_act_on() {
                let fx = fixture();
                let reg = fx.registry("alice");
                let id = save(&reg, "kept").await;
                let cases = [
                    ("update_memory", json!({"id": id}), "nothing to update: pass the new `text`, the new `tags`, or both"),
                    ("update_memory", json!({"id": "999999", "text": "x"}), "no memory with id 999999; search_memories or list_memories shows the ids that exist"),
                    ("delete_memory", json!({"id": "not-an-id"}), "no memory with id not-an-id; search_memories or list_memories shows the ids that exist"),
                    ("save_memory", json!({"text": " \n "}), "the memory text is empty; say what to remember"),
                    ("update_memory", json!({"id": id, "text": "  "}), "the memory text is empty; say what to remember"),
                ];
                for (tool, args, message) in cases {
                    let r = call(&reg, tool, args.clone()).await;
                    assert!(r.is_error, "{tool} {args}");
                    assert_eq!(r.content, message, "{tool} {args}");
                }
                // The schema refuses what it can before the store is asked.
                let r = call(&reg, "save_memory", json!({"text": ""})).await;
                assert!(r.is_error && r.content.starts_with("invalid arguments for save_memory"), "{}", r.content);
                let r = call(&reg, "search_memories", json!({"query": "kept", "limit": 500})).await;
                assert!(r.is_error && r.content.contains("limit"), "{}", r.content);
                assert_eq!(ok(&reg, "read_memory", json!({"id": id})).await["text"], "kept");
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn concurrent_saves_from_many_threads_all_land() {
                let fx = fixture();
                let threads: Vec<_> = (0..4)
                    .map(|t| {
                        let store = fx.store.clone();
                        std::thread::spawn(move || {
                            for i in 0..25 {
                                store.save("ns", harnessx_core::NewMemory::new(format!("thread {t} item {i}"))).unwrap();
                            }
                        })
                    })
                    .collect();
                for t in threads {
                    t.join().unwrap();
                }
                let all = fx.store.list("ns", 1000).unwrap();
                assert_eq!(all.len(), 100);
                let mut ids: Vec<&str> = all.iter().map(|m| m.id.as_str()).collect();
                ids.sort_unstable();
                ids.dedup();
                assert_eq!(ids.len(), 100, "ids are unique");
            }
        }
    };
}

store_cases!(in_memory, Fixture::in_memory());
store_cases!(sqlite, Fixture::sqlite());

#[test]
fn load_builtin_memory_takes_a_path_and_a_namespace() {
    harnessx_builtin::link();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let registry = ToolRegistry::new();
    let names = registry
        .load_builtin(
            "memory",
            json!({"path": path, "namespace": "alice", "include": ["save_memory", "search_memories"]}),
        )
        .unwrap();
    assert_eq!(names, ["save_memory", "search_memories"]);
    assert!(path.exists(), "the SQLite file is created at registration");
    let store = SqliteStore::open(&path).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let r = call(&registry, "save_memory", json!({"text": "saved through load_builtin"})).await;
        assert!(!r.is_error, "{}", r.content);
    });
    assert_eq!(store.list("alice", 5).unwrap()[0].text, "saved through load_builtin");
    assert!(store.list("default", 5).unwrap().is_empty());

    let err = ToolRegistry::new().load_builtin("memory", json!({"store": "x"})).unwrap_err().to_string();
    assert!(err.contains("unknown option `store`") && err.contains("namespace, path"), "{err}");
    let err = ToolRegistry::new().load_builtin("memory", json!({"namespace": 3})).unwrap_err().to_string();
    assert!(err.contains("namespace"), "{err}");
    // A single tool takes the bundle's options too.
    let single = ToolRegistry::new();
    assert_eq!(single.load_builtin("read_memory", json!({"path": path})).unwrap(), ["read_memory"]);
}
