//! Blobs kept apart from the JSON that refers to them: a medium's bytes stored once, by
//! SHA-256, and its part written as a reference.
//!
//! A durable journal writes the same image many times over (the prompt's, each tool
//! result returning it) and a Restate journal entry has a size limit, so a store writes
//! a part's bytes as a reference instead of base64:
//!
//! ```json
//! {"type": "image", "media_type": "image/png", "sha256": "9f86d0…", "bytes": 1234}
//! ```
//!
//! and keeps the bytes in a [`BlobStore`] (a table of the journal, a shared folder).
//!
//! # How references are made and resolved
//!
//! Parts sit deep inside what is journaled (a tool result in a call's entry, a message, a
//! run's prompt), and each of those types derives its serde impls. Rather than walk every
//! such type by hand (and miss the next one added), the serde impls of [`Part`](super::Part)
//! consult a scope set on the current thread around one synchronous serde call:
//!
//! - [`collecting`] runs a serialization in which every medium of at least `min_len`
//!   bytes is written as a reference, and returns the blobs referred to (each once);
//! - [`resolving`] runs a deserialization in which every reference is read from a
//!   [`BlobSource`], each blob once however many parts refer to it (the parts share one
//!   [`Bytes`]), and returns the first blob that could not be read.
//!
//! Outside such a scope a part is written inline (base64) and a reference cannot be read
//! (an error saying so). The scope is the closure's call only, on this thread: serde
//! calls do not await, so nothing else runs inside it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt::Write as _;
use std::thread::LocalKey;

use bytes::Bytes;
use sha2::{Digest, Sha256};

/// A blob as a store keeps it: its SHA-256 (lowercase hex), the media type of the part
/// that first referred to it, and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBlob {
    /// The SHA-256 of `data`, 64 lowercase hex digits.
    pub sha256: String,
    /// The media type of the part it was written from.
    pub media_type: String,
    /// The bytes.
    pub data: Bytes,
}

/// What a blob store or a reference reports: one line, naming the blob and the store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BlobError(pub String);

/// A store of blobs by SHA-256, shared by the processes that read a run (a journal's
/// table, a folder of files named by hash). Putting a blob that is there already does
/// nothing; blobs are never changed.
pub trait BlobStore: Send + Sync + std::fmt::Debug {
    /// Keeps `blob` (nothing happens when a blob with its hash is kept already).
    fn put(&self, blob: &StoredBlob) -> Result<(), BlobError>;

    /// The bytes of blob `sha256`, `None` when the store does not have it.
    fn get(&self, sha256: &str) -> Result<Option<Bytes>, BlobError>;

    /// Where the blobs are kept, for errors: `the blob store at /srv/blobs`.
    fn location(&self) -> String;
}

/// Where [`resolving`] reads the blobs that references name.
pub trait BlobSource {
    /// The bytes of blob `sha256`; an error (one line, naming the hash and where it was
    /// looked for) when it is missing or cannot be read.
    fn blob(&mut self, sha256: &str) -> Result<Bytes, BlobError>;
}

/// A shared [`BlobStore`] is a source: a missing blob is
/// `blob sha256:… is missing from the blob store at PATH`.
impl BlobSource for std::sync::Arc<dyn BlobStore> {
    fn blob(&mut self, sha256: &str) -> Result<Bytes, BlobError> {
        self.get(sha256)?
            .ok_or_else(|| BlobError(format!("blob sha256:{sha256} is missing from {}", self.location())))
    }
}

/// The SHA-256 of `data`, as 64 lowercase hex digits.
pub fn sha256_hex(data: &[u8]) -> String {
    let digest = Sha256::digest(data);
    let mut hex = String::with_capacity(64);
    for byte in digest {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// Whether `text` is a SHA-256 as references write it (64 lowercase hex digits).
pub fn is_sha256(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Runs `f` (a serialization) writing every medium of at least `min_len` bytes as a
/// reference; returns its result and the blobs referred to, each once, in the order first
/// met. Smaller media stay inline.
pub fn collecting<R>(min_len: usize, f: impl FnOnce() -> R) -> (R, Vec<StoredBlob>) {
    let scope = Scope::open(&SINK, Sink { min_len, seen: HashMap::new(), blobs: Vec::new() });
    let out = f();
    (out, scope.close().map(|sink| sink.blobs).unwrap_or_default())
}

/// Runs `f` (a deserialization) reading the blobs references name from `source`, each
/// once; returns its result and the first blob the source could not give (its error is
/// the one to report; the deserializer's own wraps it with a position). A reference that
/// is malformed, or whose length is not its blob's, fails the deserialization alone.
pub fn resolving<R>(source: impl BlobSource + 'static, f: impl FnOnce() -> R) -> (R, Option<BlobError>) {
    let scope =
        Scope::open(&SOURCE, Resolver { source: Box::new(source), cache: HashMap::new(), failed: None });
    let out = f();
    (out, scope.close().and_then(|resolver| resolver.failed))
}

/// For [`Part`](super::Part)'s `Serialize`: the hash to write in place of `data`'s base64,
/// when a [`collecting`] scope is open and `data` is large enough (the blob is recorded).
pub(super) fn reference(media_type: &str, data: &Bytes) -> Option<String> {
    SINK.with_borrow_mut(|sink| {
        let sink = sink.as_mut()?;
        if data.len() < sink.min_len {
            return None;
        }
        // The same buffer (a shared `Bytes`) is hashed once per scope.
        let key = (data.as_ptr() as usize, data.len());
        if let Some(sha256) = sink.seen.get(&key) {
            return Some(sha256.clone());
        }
        let sha256 = sha256_hex(data);
        sink.seen.insert(key, sha256.clone());
        if !sink.blobs.iter().any(|b| b.sha256 == sha256) {
            sink.blobs.push(StoredBlob {
                sha256: sha256.clone(),
                media_type: media_type.to_owned(),
                data: data.clone(),
            });
        }
        Some(sha256)
    })
}

/// For [`Part`](super::Part)'s `Deserialize`: the bytes of the blob a reference names,
/// checked against the length it gives.
pub(super) fn resolve(sha256: &str, len: u64) -> Result<Bytes, String> {
    if !is_sha256(sha256) {
        return Err(format!("`sha256` must be 64 lowercase hex digits, not {sha256:?}"));
    }
    SOURCE.with_borrow_mut(|resolver| {
        let Some(resolver) = resolver.as_mut() else {
            return Err(format!(
                "the part refers to blob sha256:{sha256}, and no blob store is there to read it from"
            ));
        };
        let data = match resolver.cache.entry(sha256.to_owned()) {
            Entry::Occupied(found) => found.get().clone(),
            Entry::Vacant(slot) => match resolver.source.blob(sha256) {
                Ok(data) => slot.insert(data).clone(),
                Err(e) => {
                    let line = e.0.clone();
                    resolver.failed.get_or_insert(e);
                    return Err(line);
                }
            },
        };
        // A fault of the reference, not of the source: said where the reference is read.
        if data.len() as u64 != len {
            return Err(format!(
                "blob sha256:{sha256} holds {} bytes where its reference says {len}",
                data.len()
            ));
        }
        Ok(data)
    })
}

struct Sink {
    min_len: usize,
    /// Hashes of the buffers met, by address and length.
    seen: HashMap<(usize, usize), String>,
    blobs: Vec<StoredBlob>,
}

struct Resolver {
    source: Box<dyn BlobSource>,
    cache: HashMap<String, Bytes>,
    failed: Option<BlobError>,
}

/// A value set in a thread-local for the length of a call: the one before it is put back
/// when the scope closes, or when it is dropped (a panicking closure).
struct Scope<T: 'static> {
    key: &'static LocalKey<RefCell<Option<T>>>,
    previous: Option<Option<T>>,
}

impl<T> Scope<T> {
    fn open(key: &'static LocalKey<RefCell<Option<T>>>, value: T) -> Self {
        Self { key, previous: Some(key.replace(Some(value))) }
    }

    /// Puts the one before back and returns this scope's value.
    fn close(mut self) -> Option<T> {
        let previous = self.previous.take().flatten();
        self.key.replace(previous)
    }
}

impl<T> Drop for Scope<T> {
    fn drop(&mut self) {
        if let Some(previous) = self.previous.take() {
            self.key.set(previous);
        }
    }
}

thread_local! {
    static SINK: RefCell<Option<Sink>> = const { RefCell::new(None) };
    static SOURCE: RefCell<Option<Resolver>> = const { RefCell::new(None) };
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::content::{Blob, Part, Parts};

    /// A source over a map, counting its reads.
    struct Map(HashMap<String, Bytes>, std::rc::Rc<std::cell::Cell<usize>>);

    impl BlobSource for Map {
        fn blob(&mut self, sha256: &str) -> Result<Bytes, BlobError> {
            self.1.set(self.1.get() + 1);
            self.0.get(sha256).cloned().ok_or_else(|| BlobError(format!("blob sha256:{sha256} is missing")))
        }
    }

    fn image(n: usize) -> Part {
        Part::image("image/png", vec![7u8; n])
    }

    #[test]
    fn sha256_is_lowercase_hex() {
        assert_eq!(sha256_hex(b"test"), "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
        assert!(is_sha256(&sha256_hex(b"")));
        assert!(!is_sha256("9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08"));
        assert!(!is_sha256("abc"));
    }

    #[test]
    fn large_media_become_references_each_blob_once() {
        let big = image(100);
        let parts: Parts = vec![big.clone(), Part::text("t"), big.clone(), image(3)].into();
        let (written, blobs) = collecting(10, || serde_json::to_value(&parts).unwrap());
        let sha256 = sha256_hex(&[7u8; 100]);
        assert_eq!(
            written[0],
            json!({"type": "image", "media_type": "image/png", "sha256": sha256, "bytes": 100})
        );
        assert_eq!(written[2], written[0]);
        // Below the threshold: inline.
        assert_eq!(written[3]["data"], "BwcH");
        assert_eq!(blobs.len(), 1);
        assert_eq!((blobs[0].sha256.as_str(), blobs[0].media_type.as_str()), (sha256.as_str(), "image/png"));
        // Outside a scope, inline again.
        assert!(serde_json::to_value(&big).unwrap().get("data").is_some());
    }

    #[test]
    fn references_resolve_once_per_blob_into_shared_bytes() {
        let parts: Parts = vec![image(100), image(100)].into();
        let (written, blobs) = collecting(0, || serde_json::to_string(&parts).unwrap());
        let reads = std::rc::Rc::new(std::cell::Cell::new(0));
        let map = blobs.into_iter().map(|b| (b.sha256, b.data)).collect();
        let (read, failed) = resolving(Map(map, reads.clone()), || serde_json::from_str::<Parts>(&written));
        let read = read.unwrap();
        assert_eq!(read, parts);
        assert!(failed.is_none());
        assert_eq!(reads.get(), 1);
        let ptr = |p: &Part| p.blob().and_then(Blob::as_bytes).unwrap().as_ptr();
        assert_eq!(ptr(&read[0]), ptr(&read[1]));
    }

    #[test]
    fn a_missing_or_corrupt_reference_is_an_error() {
        let sha256 = sha256_hex(b"gone");
        let reference = json!({"type": "image", "media_type": "image/png", "sha256": sha256, "bytes": 4});
        let none = || Map(HashMap::new(), Default::default());
        let (read, failed) = resolving(none(), || serde_json::from_value::<Part>(reference.clone()));
        assert!(read.is_err());
        assert_eq!(failed, Some(BlobError(format!("blob sha256:{sha256} is missing"))));

        let wrong_len = Map([(sha256.clone(), Bytes::from_static(b"gone"))].into(), Default::default());
        let mut long = reference.clone();
        long["bytes"] = json!(5);
        let (read, failed) = resolving(wrong_len, || serde_json::from_value::<Part>(long));
        assert!(read.unwrap_err().to_string().contains("holds 4 bytes where its reference says 5"));
        assert!(failed.is_none(), "the reference's fault, not the source's");

        for (bad, reason) in [
            (
                json!({"type": "image", "media_type": "image/png", "sha256": "zz", "bytes": 4}),
                "64 lowercase hex",
            ),
            (json!({"type": "image", "media_type": "image/png", "sha256": sha256}), "together or neither"),
            (
                json!({"type": "image", "media_type": "image/png", "sha256": sha256, "bytes": -1}),
                "invalid value",
            ),
            (
                json!({"type": "image", "media_type": "image/png", "sha256": sha256, "bytes": 4, "data": "AA=="}),
                "exactly one",
            ),
        ] {
            let (read, _) = resolving(none(), || serde_json::from_value::<Part>(bad.clone()));
            let error = read.unwrap_err().to_string();
            assert!(error.contains(reason), "{bad}: {error}");
        }
        // With no source at all: an error saying so.
        let error = serde_json::from_value::<Part>(reference).unwrap_err().to_string();
        assert!(error.contains("no blob store is there to read it from"), "{error}");
    }
}
