//! Knowledge: a folder of 54 astronomy concepts (aliases, `[[id]]` and relative Markdown
//! links, subfolders) indexed by `Agent::builder().knowledge(..)`; search ranking on
//! paraphrased questions, reading, neighbours both ways, unknown ids, broken links, bad
//! front matter, re-indexing of changed files, and runs where the model searches, reads
//! and walks the graph.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use harnessx_agent::knowledge::{KNOWLEDGE_TOOL_NAMES, Knowledge};
use harnessx_agent::model::{FunctionModel, Message, ModelRequest, ModelResponse, TestModel};
use harnessx_agent::{Agent, AgentConfig, AgentError, KnowledgeError, KnowledgeSource};
use harnessx_core::{ToolCall, ToolRegistry};
use serde_json::json;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn no_planning() -> AgentConfig {
    AgentConfig { planning: false, ..AgentConfig::default() }
}

fn knowledge() -> Knowledge {
    Knowledge::open(&KnowledgeSource::dir(fixtures().join("knowledge"))).unwrap()
}

fn agent() -> Agent {
    Agent::builder()
        .model(TestModel::new())
        .knowledge(KnowledgeSource::dir(fixtures().join("knowledge")))
        .config(no_planning())
        .build()
        .unwrap()
}

async fn call(registry: &ToolRegistry, name: &str, args: serde_json::Value) -> (String, bool) {
    let results =
        registry.execute_batch(&[ToolCall::new("1", name, args.to_string())], &Default::default()).await;
    (results[0].content.clone(), results[0].is_error)
}

fn top(k: &Knowledge, query: &str, n: usize) -> Vec<String> {
    k.search(query, n).unwrap().into_iter().map(|h| h.id).collect()
}

#[test]
fn the_fixture_indexes_with_every_link_resolved() {
    let k = knowledge();
    assert_eq!(k.len(), 54);
    assert_eq!(k.broken_links(), [], "the fixture's links all name concepts");
}

#[test]
fn paraphrased_questions_rank_the_right_concept_first() {
    let k = knowledge();
    for (query, want) in [
        ("how do stars make their light and heat", "nuclear-fusion"),
        ("what is left after a sun-like star dies", "white-dwarf"),
        ("the place around a black hole light cannot come back from", "event-horizon"),
        ("why does the sea rise and fall twice a day", "tides"),
        ("colourful lights in the polar sky", "aurora"),
        ("shooting stars", "meteor"),
        ("planets around other stars", "exoplanet"),
        ("leftover glow from the early universe", "cosmic-microwave-background"),
        ("galaxies moving away from us", "expanding-universe"),
        ("spinning neutron star that sends regular radio pulses", "pulsar"),
        ("the largest mass a white dwarf can have", "chandrasekhar-limit"),
        ("the red planet", "mars"),
    ] {
        let got = top(&k, query, 3);
        assert_eq!(got.first().map(String::as_str), Some(want), "{query:?} ranked {got:?}");
    }
}

#[test]
fn hits_carry_titles_and_one_line_snippets_best_first() {
    let k = knowledge();
    let hits = k.search("Einstein gravity theory", 5).unwrap();
    assert_eq!(hits[0].id, "general-relativity");
    assert_eq!(hits[0].title, "General relativity");
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score), "{hits:?}");
    assert!(hits.iter().all(|h| !h.snippet.contains('\n') && !h.snippet.is_empty()), "{hits:?}");
    // FTS5 syntax from the model is only words.
    assert!(k.search("\"unclosed AND (NEAR* OR", 5).is_ok());
    assert!(k.search("?!", 5).unwrap().is_empty());
    assert_eq!(k.search("the of and a in", 200).unwrap().len(), 50, "at most 50 results");
}

#[test]
fn neighbors_go_both_ways_through_wiki_and_relative_links() {
    let k = knowledge();
    let n = k.neighbors("white-dwarf").unwrap();
    let out: Vec<&str> = n.outgoing.iter().map(|c| c.id.as_str()).collect();
    let inn: Vec<&str> = n.incoming.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(out, ["chandrasekhar-limit", "earth", "star", "sun"]);
    assert_eq!(inn, ["chandrasekhar-limit", "hertzsprung-russell-diagram", "planetary-nebula", "red-giant"]);
    // Relative Markdown links, across folders: solar-system -> ../physics/orbit.md, and
    // keplers-laws -> orbit.md.
    let orbit = k.neighbors("orbit").unwrap();
    let inn: Vec<&str> = orbit.incoming.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(inn, ["gravity", "keplers-laws", "solar-system"]);
    assert_eq!(
        orbit.outgoing.iter().map(|c| c.title.as_str()).collect::<Vec<_>>(),
        ["Gravity", "Kepler's laws of planetary motion"]
    );
}

#[tokio::test]
async fn the_tools_search_read_and_walk_the_graph() {
    let agent = agent();
    let tools = agent.tools();
    for name in KNOWLEDGE_TOOL_NAMES {
        assert!(tools.contains(name), "{name}");
    }
    let (text, err) =
        call(tools, "search_concepts", json!({"query": "what remains after a supernova", "limit": 3})).await;
    assert!(!err, "{text}");
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.starts_with("1. "), "{text}");

    let (text, err) = call(tools, "read_concept", json!({"id": "pulsar"})).await;
    assert!(!err, "{text}");
    assert_eq!(
        text,
        "# Pulsar\nid: pulsar\naliases: pulsars\ntags: stellar-remnant\n\n\
         A rapidly rotating, magnetised [[neutron-star]] whose beams of radio waves sweep past [[earth]] like a lighthouse, giving very regular pulses.\n\n\
         Links out:\n- earth — Earth\n- neutron-star — Neutron star"
    );

    let (text, err) = call(tools, "get_neighbors", json!({"id": "pulsar"})).await;
    assert!(!err, "{text}");
    assert_eq!(
        text,
        "Links out of pulsar (2):\n- earth — Earth\n- neutron-star — Neutron star\nLinks into pulsar (1):\n- neutron-star — Neutron star"
    );
    let (text, _) = call(tools, "get_neighbors", json!({"id": "pulsar", "direction": "in"})).await;
    assert_eq!(text, "Links into pulsar (1):\n- neutron-star — Neutron star");
    let (text, _) = call(tools, "get_neighbors", json!({"id": "pulsar", "direction": "out"})).await;
    assert!(text.starts_with("Links out of pulsar (2):") && !text.contains("into"), "{text}");
}

#[tokio::test]
async fn aliases_and_formatting_resolve_and_unknown_ids_get_close_suggestions() {
    let agent = agent();
    let tools = agent.tools();
    let (text, err) = call(tools, "read_concept", json!({"id": "northern lights"})).await;
    assert!(!err && text.starts_with("# Aurora\n"), "an alias: {text}");
    let (text, err) = call(tools, "read_concept", json!({"id": "Black_Hole"})).await;
    assert!(!err && text.starts_with("# Black hole\n"), "formatting only: {text}");
    let (text, err) = call(tools, "read_concept", json!({"id": "neutron-stars"})).await;
    assert!(err);
    assert!(text.starts_with("Unknown concept \"neutron-stars\". Did you mean: neutron-star"), "{text}");
    assert!(text.ends_with("Find concept ids with search_concepts."), "{text}");
    let (text, err) = call(tools, "get_neighbors", json!({"id": "pulsr"})).await;
    assert!(err && text.contains("Did you mean: pulsar"), "{text}");
    let (text, err) = call(tools, "get_neighbors", json!({"id": "pulsar", "direction": "sideways"})).await;
    assert!(err, "{text}");
}

#[test]
fn the_tools_are_read_only_safe_and_concurrent() {
    let agent = agent();
    for name in KNOWLEDGE_TOOL_NAMES {
        let tool = agent.tools().get_tool(name).unwrap();
        assert!(tool.concurrent, "{name}");
        assert_eq!(tool.replay_policy, harnessx_core::ReplayPolicy::Safe, "{name}");
        assert_eq!(tool.annotations.read_only, Some(true), "{name}");
    }
}

fn write(dir: &std::path::Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

#[test]
fn broken_links_are_reported_at_index_time() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.md", "---\nid: a\ntitle: A\n---\nSee [[b]], [[nowhere]] and [gone](gone.md).\n");
    write(dir.path(), "b.md", "---\nid: b\ntitle: B\n---\nBack to [a](a.md).\n");
    let k = Knowledge::open(&KnowledgeSource::dir(dir.path())).unwrap();
    let broken: Vec<String> = k.broken_links().iter().map(|b| b.link.clone()).collect();
    assert_eq!(broken, ["[[nowhere]]", "(gone.md)"]);
    assert_eq!(k.broken_links()[0].concept, "a");
    assert!(k.broken_links()[0].to_string().ends_with("a.md: [[nowhere]] in concept \"a\" names no concept"));

    let err =
        Agent::builder().knowledge(KnowledgeSource::dir(dir.path()).deny_broken_links()).build().unwrap_err();
    assert!(matches!(&err, AgentError::Knowledge(KnowledgeError::BrokenLinks(b)) if b.len() == 2), "{err:?}");
    assert!(err.to_string().starts_with("2 broken link(s), the first: "), "{err}");
}

#[test]
fn bad_front_matter_and_duplicate_ids_fail_the_build() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.md", "---\nid: a\ntitle: A\ntags: [x\n---\nText.\n");
    let err = Agent::builder().knowledge(KnowledgeSource::dir(dir.path())).build().unwrap_err();
    let AgentError::Knowledge(KnowledgeError::FrontMatter { path, line, .. }) = &err else {
        panic!("{err:?}")
    };
    assert!(path.ends_with("a.md"));
    assert!(*line >= 4, "{err}");
    assert!(!err.to_string().contains('\n'), "{err}");

    write(dir.path(), "a.md", "---\nid: a\n---\nNo title.\n");
    let err = Agent::builder().knowledge(KnowledgeSource::dir(dir.path())).build().unwrap_err().to_string();
    assert!(err.contains("a.md:2: invalid concept front matter: ") && err.contains("title"), "{err}");

    write(dir.path(), "a.md", "---\nid: same\ntitle: A\n---\n");
    write(dir.path(), "b.md", "---\nid: same\ntitle: B\n---\n");
    let err = Agent::builder().knowledge(KnowledgeSource::dir(dir.path())).build().unwrap_err();
    assert!(
        matches!(&err, AgentError::Knowledge(KnowledgeError::DuplicateId { id, .. }) if id == "same"),
        "{err:?}"
    );
}

#[test]
fn an_index_file_re_reads_only_changed_files_and_drops_removed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let concepts = dir.path().join("concepts");
    std::fs::create_dir(&concepts).unwrap();
    write(&concepts, "a.md", "---\nid: a\ntitle: Alpha\n---\nAbout apples. [[b]]\n");
    write(&concepts, "b.md", "---\nid: b\ntitle: Beta\n---\nAbout bananas.\n");
    let source = KnowledgeSource::dir(&concepts).index_file(dir.path().join("index.db"));
    let k = Knowledge::open(&source).unwrap();
    assert_eq!(top(&k, "bananas", 5), ["b"]);
    drop(k);

    // b changed (and its size with it) and a is gone: the next build sees both.
    write(&concepts, "b.md", "---\nid: b\ntitle: Beta\n---\nAbout cherries, now. [[a]]\n");
    std::fs::remove_file(concepts.join("a.md")).unwrap();
    let k = Knowledge::open(&source).unwrap();
    assert_eq!(k.len(), 1);
    assert!(top(&k, "bananas", 5).is_empty());
    assert_eq!(top(&k, "cherries", 5), ["b"]);
    assert_eq!(k.broken_links().len(), 1, "b's link to the removed a is broken now");
}

#[test]
fn an_unchanged_file_is_not_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let concepts = dir.path().join("concepts");
    std::fs::create_dir(&concepts).unwrap();
    write(&concepts, "a.md", "---\nid: a\ntitle: Alpha\n---\nAbout apples.\n");
    let source = KnowledgeSource::dir(&concepts).index_file(dir.path().join("index.db"));
    drop(Knowledge::open(&source).unwrap());
    // Same size and modification time, other text: the index keeps what it read.
    let path = concepts.join("a.md");
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    write(&concepts, "a.md", "---\nid: a\ntitle: Alpha\n---\nAbout grapes.\n");
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(mtime).unwrap();
    let k = Knowledge::open(&source).unwrap();
    assert_eq!(top(&k, "apples", 5), ["a"]);
    assert!(top(&k, "grapes", 5).is_empty());
}

/// The full-text index agrees with the concepts table (FTS5's own check).
fn assert_fts_intact(index: &std::path::Path) {
    let conn = rusqlite::Connection::open(index).unwrap();
    conn.execute("INSERT INTO concepts_fts(concepts_fts, rank) VALUES ('integrity-check', 1)", []).unwrap();
}

#[test]
fn a_few_changed_files_are_re_indexed_row_by_row_and_the_index_stays_intact() {
    let dir = tempfile::tempdir().unwrap();
    let concepts = dir.path().join("concepts");
    std::fs::create_dir(&concepts).unwrap();
    for i in 0..12 {
        write(
            &concepts,
            &format!("c{i}.md"),
            &format!("---\nid: c{i}\ntitle: Concept {i}\n---\nPlain words {i}.\n"),
        );
    }
    write(&concepts, "c3.md", "---\nid: c3\ntitle: Concept 3\n---\nAbout walnuts.\n");
    write(&concepts, "c4.md", "---\nid: c4\ntitle: Concept 4\n---\nAbout pecans.\n");
    let index = dir.path().join("index.db");
    let source = KnowledgeSource::dir(&concepts).index_file(&index);
    drop(Knowledge::open(&source).unwrap());
    assert_fts_intact(&index);

    // Two of twelve files: updated in place, not rebuilt.
    write(&concepts, "c3.md", "---\nid: c3\ntitle: Concept 3\n---\nAbout almonds, these days.\n");
    std::fs::remove_file(concepts.join("c4.md")).unwrap();
    let k = Knowledge::open(&source).unwrap();
    assert_eq!(k.len(), 11);
    assert!(top(&k, "walnuts", 5).is_empty());
    assert!(top(&k, "pecans", 5).is_empty());
    assert_eq!(top(&k, "almonds", 5), ["c3"]);
    assert_eq!(top(&k, "plain words", 20).len(), 10);
    drop(k);
    assert_fts_intact(&index);
}

#[test]
fn a_broad_search_ranks_as_the_exact_ranking_would() {
    // 1,200 concepts hold two common words, 30 of them a rarer one too, 10 of those a
    // fourth: a three- or four-word query matches more concepts than are ranked one by
    // one, so only those holding the most words are.
    let dir = tempfile::tempdir().unwrap();
    let concepts = dir.path().join("concepts");
    std::fs::create_dir(&concepts).unwrap();
    for i in 0..1_200 {
        let extra = match i % 40 {
            0 => " orbit resonance",
            _ if i % 40 < 3 => " orbit",
            _ => "",
        };
        let filler = "word ".repeat(i % 7);
        write(
            &concepts,
            &format!("c{i:04}.md"),
            &format!("---\nid: c{i:04}\ntitle: Note {i}\n---\nA common usual note {filler}{extra}.\n"),
        );
    }
    let index = dir.path().join("index.db");
    let k = Knowledge::open(&KnowledgeSource::dir(&concepts).index_file(&index)).unwrap();
    let conn = rusqlite::Connection::open(&index).unwrap();
    let exact = |fts: &str, n: usize| -> Vec<String> {
        let mut stmt = conn
            .prepare(
                "SELECT c.id FROM concepts_fts CROSS JOIN concepts c ON c.rowid = concepts_fts.rowid \
                 WHERE concepts_fts MATCH ?1 \
                 ORDER BY bm25(concepts_fts, 4.0, 8.0, 6.0, 2.0, 1.0), c.id LIMIT ?2",
            )
            .unwrap();
        stmt.query_map(rusqlite::params![fts, n as i64], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
    };
    for (query, fts) in [
        ("common usual orbit", r#""common" OR "usual" OR "orbit""#),
        ("common usual orbit resonance", r#""common" OR "usual" OR "orbit" OR "resonance""#),
    ] {
        for n in [5, 10, 40] {
            let hits = k.search(query, n).unwrap();
            let ids: Vec<String> = hits.iter().map(|h| h.id.clone()).collect();
            assert_eq!(ids, exact(fts, n), "{query} (limit {n})");
            assert!(hits.iter().all(|h| h.snippet.contains("common")), "{hits:?}");
        }
    }
}

#[test]
fn knowledge_is_not_a_bundle_name() {
    let err = ToolRegistry::new().load_builtin("knowledge", json!({})).unwrap_err();
    assert!(matches!(err, harnessx_core::RegistryError::Unknown { .. }), "{err:?}");
}

#[tokio::test]
async fn the_model_searches_reads_then_walks_the_graph() {
    let log: Arc<Mutex<Vec<ModelRequest>>> = Arc::new(Mutex::new(Vec::new()));
    let turns = Mutex::new(
        vec![
            ModelResponse::tool_calls(vec![ToolCall::new(
                "c1",
                "search_concepts",
                json!({"query": "what is left when a massive star explodes"}).to_string(),
            )]),
            ModelResponse::tool_calls(vec![ToolCall::new(
                "c2",
                "read_concept",
                json!({"id": "supernova"}).to_string(),
            )]),
            ModelResponse::tool_calls(vec![ToolCall::new(
                "c3",
                "get_neighbors",
                json!({"id": "neutron-star"}).to_string(),
            )]),
            ModelResponse::text("A neutron star or a black hole."),
        ]
        .into_iter(),
    );
    let model = {
        let log = log.clone();
        FunctionModel::new(move |req| {
            log.lock().unwrap().push(req.clone());
            Ok(turns.lock().unwrap().next().unwrap())
        })
    };
    let agent = Agent::builder()
        .model(model)
        .knowledge(KnowledgeSource::dir(fixtures().join("knowledge")))
        .config(no_planning())
        .build()
        .unwrap();
    let result = agent.run("What does a supernova leave behind?").await.unwrap();
    assert_eq!(result.output, "A neutron star or a black hole.");
    let results: Vec<(String, bool)> = result
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { content, is_error, .. } => Some((content.clone(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|(_, e)| !e), "{results:?}");
    assert!(results[0].0.lines().any(|l| l.contains(" supernova — Supernova: ")), "{}", results[0].0);
    assert!(results[1].0.contains("Links out:\n- black-hole — Black hole\n"), "{}", results[1].0);
    assert!(results[2].0.contains("Links into neutron-star ("), "{}", results[2].0);
    let requests = log.lock().unwrap();
    let names: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, KNOWLEDGE_TOOL_NAMES);
}

#[tokio::test]
async fn a_test_model_run_calls_every_knowledge_tool() {
    let result = agent().run("go").await.unwrap();
    assert!(result.output.starts_with("Ran 3 tool calls:"), "{}", result.output);
}

/// Hostile YAML for a front matter key nobody reads: flow lists, flow maps, block lists
/// and an unclosed flow list nested `depth` levels.
pub(crate) fn deep_yaml(depth: usize) -> [(&'static str, String); 4] {
    [
        ("flow lists", format!("{}{}", "[".repeat(depth), "]".repeat(depth))),
        ("flow maps", format!("{}1{}", "{a: ".repeat(depth), "}".repeat(depth))),
        ("block lists", format!("\n  {}1", "- ".repeat(depth))),
        ("unclosed", "[".repeat(depth)),
    ]
}

/// Spec: no untrusted input recurses without bound. Front matter nested 1 to 1,000,000
/// levels deep in every shape, and a billion-laughs alias bomb: up to YAML's 64 levels
/// (the top-level map is one) the concept indexes, past them (and for the bomb) the build fails with one line that
/// names the file, the line and the limit; every case ends quickly.
#[test]
fn hostile_front_matter_fails_with_a_line_that_names_the_limit() {
    use harnessx_test_support::deep::DEPTHS;
    let dir = tempfile::tempdir().unwrap();
    let open = || Knowledge::open(&KnowledgeSource::dir(dir.path()));
    for depth in DEPTHS.into_iter().chain([63, 64, 256]) {
        for (shape, yaml) in deep_yaml(depth) {
            write(dir.path(), "a.md", &format!("---\nid: a\ntitle: A\nextra: {yaml}\n---\nText.\n"));
            let started = std::time::Instant::now();
            let outcome = open();
            assert!(started.elapsed() < std::time::Duration::from_secs(10), "{shape} {depth}");
            let case = format!("{shape} at depth {depth}");
            match outcome {
                Ok(k) => assert!(shape != "unclosed" && depth < 64 && k.len() == 1, "{case}"),
                Err(KnowledgeError::FrontMatter { line, message, .. }) => {
                    assert!(shape == "unclosed" || depth >= 64, "{case}: {message}");
                    assert!(line == 4 || line == 5, "{case}: line {line}");
                    assert!(!message.contains('\n'), "{case}");
                    let expected = if shape == "unclosed" {
                        ["unclosed bracket", "recursion limit exceeded"].as_slice()
                    } else if shape == "flow lists" && depth > 255 {
                        // The YAML scanner's own limit on flow nesting.
                        ["recursion limit exceeded"].as_slice()
                    } else {
                        ["the YAML nests lists and maps more than 64 levels deep; flatten it"].as_slice()
                    };
                    assert!(expected.iter().any(|e| message.contains(e)), "{case}: {message}");
                }
                Err(e) => panic!("{case}: {e}"),
            }
        }
    }
    let mut laughs = String::from("l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        laughs.push_str(&format!("l{i}: &l{i} [{}]\n", vec![format!("*l{}", i - 1); 10].join(", ")));
    }
    write(dir.path(), "a.md", &format!("---\nid: a\ntitle: A\n{laughs}---\nText.\n"));
    let started = std::time::Instant::now();
    let err = open().unwrap_err().to_string();
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert!(
        err.contains(
            "invalid concept front matter: the YAML has more than 250000 values once aliases are expanded"
        ),
        "{err}"
    );
}

/// Spec: no untrusted input recurses without bound. Link text nested, unclosed and
/// repeated: `[[` and `(` nested 1 to 1,000,000 deep, unclosed runs of `[[` and `](`, and
/// a body of a million distinct links all index in linear work (before the fix, each link
/// was compared with every earlier one: 100,000 distinct links took 52 s).
#[test]
fn nested_unclosed_and_countless_links_index_in_bounded_time() {
    use harnessx_test_support::deep::DEPTHS;
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "b.md", "---\nid: b\ntitle: B\n---\nB.\n");
    for depth in DEPTHS {
        let bodies = [
            // `[[b]]` and `[t](b.md)` link to `b`; nested, the brackets are part of the target.
            ("nested wiki", format!("{}b{}", "[[".repeat(depth), "]]".repeat(depth)), usize::from(depth > 1)),
            (
                "nested parens",
                format!("[t]{}b.md{}", "(".repeat(depth), ")".repeat(depth)),
                usize::from(depth > 1),
            ),
            ("unclosed wiki", "[[".repeat(depth), 0),
            ("unclosed target", "](".repeat(depth), 0),
            ("distinct", (0..depth).map(|i| format!("[[n{i}]] ")).collect(), depth),
        ];
        for (shape, body, broken) in bodies {
            write(dir.path(), "a.md", &format!("---\nid: a\ntitle: A\n---\n{body}\n"));
            // No clock here: a quadratic regression (10^12 comparisons at a million
            // links) does not finish, which the test run's own limit reports.
            let k = Knowledge::open(&KnowledgeSource::dir(dir.path()))
                .unwrap_or_else(|e| panic!("{shape} {depth}: {e}"));
            assert_eq!(k.broken_links().len(), broken, "{shape} at depth {depth}");
        }
    }
}
