//! Media in a Restate journal: a blob larger than [`INLINE_MAX`] is put in the blob store
//! the workers share and the journal entry refers to it by SHA-256; smaller ones stay
//! inline. A Restate journal entry has a size limit, and a run's entries are replayed to
//! every worker that picks it up: a 5 MB screenshot there would be both too large and
//! sent again on every step.

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use harnessx_core::content::store::{self, BlobStore};

/// The largest medium kept inline in a journal entry (64 KiB).
pub const INLINE_MAX: usize = 64 * 1024;

/// `value` as its journal entry holds it: media over [`INLINE_MAX`] put in `store` (before
/// the entry is committed) and referred to. Without a store, such a medium is refused:
/// `what` names whose it is in the one-line error.
pub(crate) fn externalize<T: Serialize + ?Sized>(
    store: Option<&Arc<dyn BlobStore>>,
    value: &T,
    what: &str,
) -> Result<Value, String> {
    let (written, blobs) = store::collecting(INLINE_MAX + 1, || serde_json::to_value(value));
    let written = written.map_err(|e| format!("{what} cannot be written: {e}"))?;
    match store {
        Some(store) => {
            for blob in &blobs {
                store.put(blob).map_err(|e| e.0)?;
            }
        }
        None => {
            if let Some(blob) = blobs.first() {
                return Err(format!(
                    "{what} holds {} bytes of {}, over the {INLINE_MAX} bytes a Restate journal entry holds inline; configure a blob store the workers and clients share (`--blob-store DIR`, `blob_store(PATH)` in Rust)",
                    blob.data.len(),
                    blob.media_type
                ));
            }
        }
    }
    Ok(written)
}

/// The value a journal entry holds, its references read from `store` (each blob once);
/// a blob missing from it is `blob sha256:… is missing from the blob store at PATH`.
pub(crate) fn internalize<T: DeserializeOwned>(
    store: Option<&Arc<dyn BlobStore>>,
    value: Value,
    what: &str,
) -> Result<T, String> {
    let read = match store {
        Some(store) => {
            let (read, missing) = store::resolving(store.clone(), || serde_json::from_value(value));
            if let Some(missing) = missing {
                return Err(missing.0);
            }
            read
        }
        None => serde_json::from_value(value),
    };
    read.map_err(|e| format!("{what} cannot be read: {e}"))
}
