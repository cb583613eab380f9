//! Record and replay model exchanges, for tests of your own agents that run offline.
//!
//! A [`RecordingModel`] wraps any [`Model`] and writes each exchange it completes to a
//! folder as a cassette: one JSON file holding the model's name, the request (the
//! harness's own provider-neutral form, so no key or header is ever in it) and the
//! response. A [`ReplayModel`] answers from such a folder with no network; a request no
//! cassette matches is an error naming the nearest cassette and where it differs, never
//! a live call. [`FunctionModel`](crate::model::FunctionModel) scripts a model without
//! any recording.
//!
//! Matching compares the requests after [`normalize`]: the volatile fields are left out
//! or renumbered (tool call ids, in order of appearance; the durable run's cache key), so
//! a replayed run whose provider made up other ids matches its recording.
//!
//! A request asked again (a specialist given the same task twice in a run, a case
//! recorded more than once) has a cassette for each time it was asked: they answer in
//! file order, which is the order they were recorded in, one per ask, starting over after
//! the last. A run that asks as many times as were recorded gets what was recorded, and
//! so does the next run from the same model.

use std::collections::HashMap;
use std::hash::{BuildHasher as _, BuildHasherDefault, DefaultHasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::StreamExt as _;
use futures_util::future::BoxFuture;
use futures_util::stream::{self, BoxStream};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{Model, ModelError, ModelEvent, ModelRequest, ModelResponse, response_to_events};

/// The cassette format's version, written in each file.
pub const CASSETTE_VERSION: u32 = 1;

/// The largest cassette read: room for a request that carries media.
pub const MAX_CASSETTE_BYTES: u64 = 256 << 20;

/// The most differences a mismatch error lists.
const MAX_DIFFERENCES: usize = 3;

/// One recorded exchange.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cassette {
    /// [`CASSETTE_VERSION`].
    pub version: u32,
    /// The model that answered ([`Model::name`]).
    pub model: String,
    /// The request, [normalized](normalize).
    pub request: Value,
    /// The response.
    pub response: ModelResponse,
}

impl Cassette {
    /// The exchange of `request` and `response` with `model`.
    pub fn new(model: impl Into<String>, request: &ModelRequest, response: ModelResponse) -> Self {
        Self { version: CASSETTE_VERSION, model: model.into(), request: normalize(request), response }
    }

    /// Reads a cassette file (a regular file of at most [`MAX_CASSETTE_BYTES`]); the error
    /// is one line naming it.
    pub fn read(path: &Path) -> Result<Self, String> {
        Self::read_at_most(path, MAX_CASSETTE_BYTES)
    }

    fn read_at_most(path: &Path, max: u64) -> Result<Self, String> {
        use std::io::Read as _;
        // A FIFO or a device named `*.json` would be opened or read forever.
        let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if !meta.is_file() {
            return Err(format!("{}: not a cassette: not a regular file", path.display()));
        }
        let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut text = String::new();
        file.take(max + 1).read_to_string(&mut text).map_err(|e| format!("{}: {e}", path.display()))?;
        if text.len() as u64 > max {
            return Err(format!("{}: not a cassette: larger than {} MiB", path.display(), max >> 20));
        }
        let cassette: Self =
            serde_json::from_str(&text).map_err(|e| format!("{}: not a cassette: {e}", path.display()))?;
        if cassette.version != CASSETTE_VERSION {
            return Err(format!(
                "{}: cassette version {} (this harness reads {CASSETTE_VERSION})",
                path.display(),
                cassette.version
            ));
        }
        Ok(cassette)
    }

    /// The cassettes of `dir`, by file name (`*.json`); the error is one line naming the
    /// first file that is not one.
    pub fn read_dir(dir: &Path) -> Result<Vec<(PathBuf, Self)>, String> {
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut paths: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        // By number (`0002.json` before `10000.json`), then by name.
        paths.sort_by_cached_key(|p| {
            let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            (stem.parse::<u64>().map_or(u64::MAX, |n| n), stem)
        });
        paths.into_iter().map(|p| Self::read(&p).map(|c| (p, c))).collect()
    }

    /// Writes the cassette to a new file in `dir` (created if missing): `NNNN.json`, the
    /// next free number. Never overwrites a file.
    pub fn write_new(&self, dir: &Path) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(dir)?;
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        let mut n = std::fs::read_dir(dir)?.flatten().count() + 1;
        loop {
            let path = dir.join(format!("{n:04}.json"));
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut file) => {
                    std::io::Write::write_all(&mut file, text.as_bytes())?;
                    return Ok(path);
                }
                // Another recorder took it.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
                Err(e) => return Err(e),
            }
        }
    }
}

/// `request` as cassettes keep and match it: its JSON without the cache key, each tool
/// call id renumbered `call_1`, `call_2`, ... in order of appearance (a result keeps the
/// number of its call).
pub fn normalize(request: &ModelRequest) -> Value {
    let mut value = serde_json::to_value(request).unwrap_or(Value::Null);
    if let Some(map) = value.as_object_mut() {
        map.remove("prompt_cache_key");
    }
    let mut ids: HashMap<String, String> = HashMap::new();
    let mut renumber = |id: &mut Value| {
        if let Value::String(s) = id {
            let next = ids.len() + 1;
            *s = ids.entry(std::mem::take(s)).or_insert_with(|| format!("call_{next}")).clone();
        }
    };
    for message in value.get_mut("messages").and_then(Value::as_array_mut).into_iter().flatten() {
        for call in message.get_mut("tool_calls").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(id) = call.get_mut("id") {
                renumber(id);
            }
        }
        if let Some(id) = message.get_mut("call_id") {
            renumber(id);
        }
    }
    value
}

/// Visits each pair of leaves at which two JSON values differ, with its path (`a.b[2]`,
/// `.` for the values themselves; object keys in sorted order), while `visit` returns
/// true; false once it stopped.
fn each_difference<F>(recorded: &Value, now: &Value, path: &str, visit: &mut F) -> bool
where
    F: FnMut(&str, &Value, &Value) -> bool,
{
    if recorded == now {
        return true;
    }
    match (recorded, now) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))).collect();
            keys.sort();
            keys.into_iter().all(|key| {
                let at = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                let (x, y) = (a.get(key).unwrap_or(&Value::Null), b.get(key).unwrap_or(&Value::Null));
                each_difference(x, y, &at, visit)
            })
        }
        (Value::Array(a), Value::Array(b)) => (0..a.len().max(b.len())).all(|i| {
            let (x, y) = (a.get(i).unwrap_or(&Value::Null), b.get(i).unwrap_or(&Value::Null));
            each_difference(x, y, &format!("{path}[{i}]"), visit)
        }),
        _ => visit(if path.is_empty() { "." } else { path }, recorded, now),
    }
}

/// Where two JSON values differ: `path: recorded X, now Y`, at most `max` of them.
fn differences(recorded: &Value, now: &Value, max: usize) -> Vec<String> {
    let mut out = Vec::new();
    each_difference(recorded, now, "", &mut |path, recorded, now| {
        out.push(format!("{path}: recorded {}, now {}", shown(recorded), shown(now)));
        out.len() < max
    });
    out
}

/// A value on one short line.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 120 {
        return text;
    }
    let cut: String = text.chars().take(120).collect();
    format!("{cut}…")
}

/// How far apart two requests are: the number of differing leaves (capped), then, between
/// as many, how much their texts differ (the characters outside a differing pair's common
/// start and end), so that of two prompts changed in one place the nearer is named.
fn distance(recorded: &Value, now: &Value) -> (usize, usize) {
    let mut far = (0, 0);
    each_difference(recorded, now, "", &mut |_, recorded, now| {
        far.0 += 1;
        far.1 += match (recorded, now) {
            (Value::String(x), Value::String(y)) => unlike(x, y),
            _ => UNLIKE_VALUES,
        };
        far.0 < 1000
    });
    far
}

/// How unlike two differing values that are not both texts are, in [`distance`]'s
/// characters.
const UNLIKE_VALUES: usize = 64;

/// The characters of `x` and `y` outside their common start and end.
fn unlike(x: &str, y: &str) -> usize {
    let (lx, ly) = (x.chars().count(), y.chars().count());
    let start = x.chars().zip(y.chars()).take_while(|(a, b)| a == b).count();
    let end = x.chars().rev().zip(y.chars().rev()).take_while(|(a, b)| a == b).count();
    let common = (start + end).min(lx.min(ly));
    lx + ly - 2 * common
}

/// A model that answers from cassettes, with no network. See the [module docs](self).
///
/// Clones share the cassettes, and how many times each request was asked.
#[derive(Debug, Clone)]
pub struct ReplayModel {
    name: String,
    tapes: Arc<Tapes>,
}

/// The cassettes, in file order, found by their request.
#[derive(Debug)]
struct Tapes {
    cassettes: Vec<(PathBuf, Cassette)>,
    /// By the hash of a request: each distinct request that has it (a hash is shared by
    /// equal requests, and rarely by others).
    by_hash: HashMap<u64, Vec<Asked>>,
}

/// The cassettes of one request, in file order, and how many times it was asked.
#[derive(Debug)]
struct Asked {
    cassettes: Vec<usize>,
    times: AtomicUsize,
}

/// The hash of a normalized request: the same for equal ones (an object's keys are
/// hashed sorted, as they are compared).
fn request_hash(request: &Value) -> u64 {
    BuildHasherDefault::<DefaultHasher>::default().hash_one(request)
}

impl Tapes {
    fn new(cassettes: Vec<(PathBuf, Cassette)>) -> Self {
        let mut by_hash: HashMap<u64, Vec<Asked>> = HashMap::with_capacity(cassettes.len());
        for (i, (_, cassette)) in cassettes.iter().enumerate() {
            let same_hash = by_hash.entry(request_hash(&cassette.request)).or_default();
            match same_hash.iter_mut().find(|a| cassettes[a.cassettes[0]].1.request == cassette.request) {
                Some(asked) => asked.cassettes.push(i),
                None => same_hash.push(Asked { cassettes: vec![i], times: AtomicUsize::new(0) }),
            }
        }
        Self { cassettes, by_hash }
    }

    /// The cassette answering this ask of `request`: the next of those holding it.
    fn next(&self, request: &Value) -> Option<&Cassette> {
        let same_hash = self.by_hash.get(&request_hash(request))?;
        let asked = same_hash.iter().find(|a| self.cassettes[a.cassettes[0]].1.request == *request)?;
        let time = asked.times.fetch_add(1, Ordering::Relaxed);
        Some(&self.cassettes[asked.cassettes[time % asked.cassettes.len()]].1)
    }
}

impl ReplayModel {
    /// Answers from the cassettes in `dir`; named after the model of the first one.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, String> {
        let dir = dir.as_ref();
        let cassettes = Cassette::read_dir(dir)?;
        let name = cassettes.first().map_or_else(|| "replay".to_owned(), |(_, c)| c.model.clone());
        Ok(Self { name, tapes: Arc::new(Tapes::new(cassettes)) })
    }

    /// Answers from `cassettes`.
    pub fn new(cassettes: Vec<Cassette>) -> Self {
        let name = cassettes.first().map_or_else(|| "replay".to_owned(), |c| c.model.clone());
        let cassettes = cassettes.into_iter().map(|c| (PathBuf::from("(given)"), c)).collect();
        Self { name, tapes: Arc::new(Tapes::new(cassettes)) }
    }

    /// The response recorded for `request`, or the error naming the nearest cassette.
    pub fn answer(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let now = normalize(request);
        if let Some(cassette) = self.tapes.next(&now) {
            return Ok(cassette.response.clone());
        }
        let Some((path, nearest)) =
            self.tapes.cassettes.iter().min_by_key(|(_, c)| distance(&c.request, &now))
        else {
            return Err(ModelError::Other("no cassette matches this request: there are no cassettes".into()));
        };
        let out = differences(&nearest.request, &now, MAX_DIFFERENCES);
        Err(ModelError::Other(format!(
            "no cassette matches this request; the nearest, {}, differs at {}",
            path.display(),
            out.join("; ")
        )))
    }
}

impl Model for ReplayModel {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        match self.answer(request) {
            Ok(response) => stream::iter(response_to_events(response).into_iter().map(Ok)).boxed(),
            Err(e) => stream::once(async move { Err(e) }).boxed(),
        }
    }

    fn complete<'a>(&'a self, request: &'a ModelRequest) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(std::future::ready(self.answer(request)))
    }
}

/// A model that records each exchange of the model it wraps as a cassette in a folder.
/// See the [module docs](self).
pub struct RecordingModel {
    inner: Arc<dyn Model>,
    dir: PathBuf,
    written: AtomicUsize,
}

impl RecordingModel {
    /// Records `inner`'s exchanges in `dir` (created on the first one).
    pub fn new(inner: impl Model + 'static, dir: impl Into<PathBuf>) -> Self {
        Self::shared(Arc::new(inner), dir)
    }

    /// [`new`](Self::new), for a model already shared.
    pub fn shared(inner: Arc<dyn Model>, dir: impl Into<PathBuf>) -> Self {
        Self { inner, dir: dir.into(), written: AtomicUsize::new(0) }
    }

    /// How many cassettes it wrote.
    pub fn written(&self) -> usize {
        self.written.load(Ordering::SeqCst)
    }

    fn keep(&self, request: &ModelRequest, response: &ModelResponse) -> Result<(), ModelError> {
        let cassette = Cassette::new(self.inner.name(), request, response.clone());
        cassette
            .write_new(&self.dir)
            .map_err(|e| ModelError::Other(format!("recording to {}: {e}", self.dir.display())))?;
        self.written.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

impl std::fmt::Debug for RecordingModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingModel").field("inner", &self.inner.name()).field("dir", &self.dir).finish()
    }
}

impl Model for RecordingModel {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn provider_name(&self) -> String {
        self.inner.provider_name()
    }

    fn model_name(&self) -> String {
        self.inner.model_name()
    }

    fn retries_itself(&self) -> bool {
        self.inner.retries_itself()
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        // Passed on as it comes; recorded once its last event holds the whole response.
        self.inner
            .stream(request)
            .then(move |event| async move {
                if let Ok(ModelEvent::Done(response)) = &event {
                    self.keep(request, response)?;
                }
                event
            })
            .boxed()
    }

    fn complete<'a>(&'a self, request: &'a ModelRequest) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let response = self.inner.complete(request).await?;
            self.keep(request, &response)?;
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use harnessx_core::ToolCall;

    use super::*;
    use crate::model::{FunctionModel, Message};

    fn request(prompt: &str, call_id: &str) -> ModelRequest {
        ModelRequest {
            messages: vec![
                Message::user(prompt),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![ToolCall::new(call_id, "read_file", r#"{"path":"a"}"#)],
                    reasoning: Vec::new(),
                },
                Message::Tool {
                    call_id: call_id.into(),
                    name: "read_file".into(),
                    content: "hello".into(),
                    is_error: false,
                    parts: Default::default(),
                },
            ],
            prompt_cache_key: Some(format!("run-{call_id}")),
            ..ModelRequest::default()
        }
    }

    #[test]
    fn ids_and_the_cache_key_do_not_count() {
        assert_eq!(normalize(&request("hi", "toolu_01")), normalize(&request("hi", "call_xyz")));
        let value = normalize(&request("hi", "toolu_01"));
        assert_eq!(value["messages"][1]["tool_calls"][0]["id"], "call_1");
        assert_eq!(value["messages"][2]["call_id"], "call_1");
        assert!(value.get("prompt_cache_key").is_none());
    }

    #[tokio::test]
    async fn recorded_then_replayed_and_a_changed_request_names_the_difference() {
        let dir = tempfile::tempdir().unwrap();
        let live =
            FunctionModel::new(|req| Ok(ModelResponse::text(format!("{} messages", req.messages.len()))));
        let recording = RecordingModel::new(live, dir.path().join("tapes"));
        let first = recording.complete(&request("hi", "a1")).await.unwrap();
        // Streamed: recorded once the stream is done.
        let events: Vec<_> = recording.stream(&request("bye", "b1")).collect().await;
        assert!(events.iter().all(Result::is_ok));
        assert_eq!(recording.written(), 2);

        let replay = ReplayModel::from_dir(dir.path().join("tapes")).unwrap();
        assert_eq!(replay.complete(&request("hi", "other-id")).await.unwrap(), first);
        let streamed: Vec<_> = replay.stream(&request("bye", "x")).collect().await;
        assert!(matches!(streamed.last(), Some(Ok(ModelEvent::Done(r))) if r.content == "3 messages"));

        let error = replay.complete(&request("hello", "a1")).await.unwrap_err().to_string();
        assert!(error.starts_with("no cassette matches this request; the nearest, "), "{error}");
        assert!(
            error.contains("0001.json, differs at messages[0].content: recorded \"hi\", now \"hello\""),
            "{error}"
        );
        assert!(!error.contains('\n'), "{error}");
    }

    fn text(response: Result<ModelResponse, ModelError>) -> String {
        response.unwrap().content
    }

    #[test]
    fn each_of_many_requests_gets_its_own_answer() {
        let cassettes: Vec<Cassette> = (0..200)
            .map(|i| {
                Cassette::new("m", &request(&format!("prompt {i}"), "a"), ModelResponse::text(i.to_string()))
            })
            .collect();
        let replay = ReplayModel::new(cassettes);
        for i in (0..200).rev() {
            assert_eq!(text(replay.answer(&request(&format!("prompt {i}"), "x"))), i.to_string());
        }
        // Every cassette is one leaf away: the one whose text is nearest is named.
        let error = replay.answer(&request("prompt 7x", "a")).unwrap_err().to_string();
        assert!(
            error.contains("differs at messages[0].content: recorded \"prompt 7\", now \"prompt 7x\""),
            "{error}"
        );
        let error = replay.answer(&request("a prompt 123", "a")).unwrap_err().to_string();
        assert!(error.contains("recorded \"prompt 123\", now \"a prompt 123\""), "{error}");
    }

    #[test]
    fn a_hand_edited_cassette_with_its_keys_reordered_still_matches() {
        fn reversed(value: &Value) -> Value {
            match value {
                Value::Object(map) => map.iter().rev().map(|(k, v)| (k.clone(), reversed(v))).collect(),
                Value::Array(items) => items.iter().map(reversed).collect(),
                other => other.clone(),
            }
        }
        let mut cassette = Cassette::new("m", &request("hi", "a"), ModelResponse::text("found"));
        cassette.request = reversed(&cassette.request);
        // Written in another order (object keys keep their order here), equal all the same.
        assert_ne!(cassette.request.to_string(), normalize(&request("hi", "a")).to_string());
        let replay = ReplayModel::new(vec![cassette]);
        assert_eq!(text(replay.answer(&request("hi", "b"))), "found");
    }

    #[test]
    fn a_request_asked_again_gets_the_next_recording_in_file_order_then_the_first_again() {
        let dir = tempfile::tempdir().unwrap();
        for (prompt, answer) in [("again", "one"), ("other", "x"), ("again", "two"), ("again", "three")] {
            Cassette::new("m", &request(prompt, "a"), ModelResponse::text(answer))
                .write_new(dir.path())
                .unwrap();
        }
        let replay = ReplayModel::from_dir(dir.path()).unwrap();
        let shared = replay.clone();
        assert_eq!(text(replay.answer(&request("again", "a"))), "one");
        assert_eq!(text(replay.answer(&request("other", "a"))), "x");
        // A clone shares the count.
        assert_eq!(text(shared.answer(&request("again", "a"))), "two");
        assert_eq!(text(replay.answer(&request("again", "a"))), "three");
        assert_eq!(text(replay.answer(&request("again", "a"))), "one");
        assert_eq!(text(replay.answer(&request("other", "a"))), "x");
        // A miss names the first of equally near cassettes, as before.
        let error = replay.answer(&request("agai", "a")).unwrap_err().to_string();
        assert!(error.contains("0001.json, differs at"), "{error}");
    }

    #[test]
    fn cassettes_are_read_in_the_order_of_their_numbers() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["10000", "0002", "9999", "notes"] {
            let cassette = Cassette::new("m", &request(name, "a"), ModelResponse::text(name));
            std::fs::write(
                dir.path().join(format!("{name}.json")),
                serde_json::to_string(&cassette).unwrap(),
            )
            .unwrap();
        }
        let read = Cassette::read_dir(dir.path()).unwrap();
        let names: Vec<_> =
            read.iter().map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["0002.json", "9999.json", "10000.json", "notes.json"]);
    }

    #[test]
    fn a_broken_cassette_is_one_line_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("0001.json"), "{not json").unwrap();
        let error = ReplayModel::from_dir(dir.path()).unwrap_err();
        assert!(error.contains("0001.json: not a cassette"), "{error}");
        assert!(!error.contains('\n'), "{error}");
        let big = dir.path().join("big.json");
        std::fs::write(&big, vec![b' '; 3 << 20]).unwrap();
        let error = Cassette::read_at_most(&big, 2 << 20).unwrap_err();
        assert!(error.ends_with("big.json: not a cassette: larger than 2 MiB"), "{error}");
        let folder = dir.path().join("folder.json");
        std::fs::create_dir(&folder).unwrap();
        assert!(Cassette::read(&folder).unwrap_err().contains("not a regular file"));
        let fifo = dir.path().join("fifo.json");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        assert!(Cassette::read(&fifo).unwrap_err().contains("not a regular file"), "never blocks on a FIFO");
        std::fs::remove_file(&fifo).unwrap();
        std::fs::remove_file(&big).unwrap();
        std::fs::remove_dir(&folder).unwrap();
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        std::fs::write(dir.path().join("0001.json"), deep).unwrap();
        assert!(ReplayModel::from_dir(dir.path()).unwrap_err().contains("not a cassette"));
    }
}
