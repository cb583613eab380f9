//! [`FolderBlobStore`]: blobs kept as files named by their SHA-256 in a folder that every
//! process of a cluster reaches (a shared or network file system), for the media too
//! large to sit in a Restate journal entry.
//!
//! A blob is written to a temporary file in the folder and renamed into place, so a
//! reader sees a whole blob or none; a blob read back is hashed again, so a damaged file
//! is an error naming it, never bytes sent to a model.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use harnessx_core::Bytes;
use harnessx_core::content::store::{BlobError, BlobStore, StoredBlob, is_sha256, sha256_hex};

/// Blobs as files `FOLDER/<sha256>` (see the module doc).
#[derive(Debug, Clone)]
pub struct FolderBlobStore {
    dir: PathBuf,
}

impl FolderBlobStore {
    /// The store in folder `dir`, created if missing.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, BlobError> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir)
            .map_err(|e| BlobError(format!("cannot create the blob store folder {}: {e}", dir.display())))?;
        Ok(Self { dir })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn file(&self, sha256: &str) -> Result<PathBuf, BlobError> {
        // The name is a hash, never a path: nothing outside the folder is reached.
        if !is_sha256(sha256) {
            return Err(BlobError(format!("{sha256:?} is not a SHA-256 (64 lowercase hex digits)")));
        }
        Ok(self.dir.join(sha256))
    }
}

impl BlobStore for FolderBlobStore {
    fn put(&self, blob: &StoredBlob) -> Result<(), BlobError> {
        let path = self.file(&blob.sha256)?;
        if path.exists() {
            return Ok(());
        }
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let temp = self.dir.join(format!(
            ".{}.{}-{}.tmp",
            blob.sha256,
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let failed = |e: std::io::Error| {
            BlobError(format!("cannot write blob sha256:{} to {}: {e}", blob.sha256, self.location()))
        };
        let written = (|| {
            use std::io::Write;
            let mut file = std::fs::File::create(&temp)?;
            file.write_all(&blob.data)?;
            file.sync_all()?;
            std::fs::rename(&temp, &path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(failed(e));
        }
        Ok(())
    }

    fn get(&self, sha256: &str) -> Result<Option<Bytes>, BlobError> {
        let path = self.file(sha256)?;
        let data = match std::fs::read(&path) {
            Ok(data) => data,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(BlobError(format!(
                    "cannot read blob sha256:{sha256} from {}: {e}",
                    self.location()
                )));
            }
        };
        let found = sha256_hex(&data);
        if found != sha256 {
            return Err(BlobError(format!(
                "blob sha256:{sha256} in {} is damaged (its bytes hash to {found})",
                self.location()
            )));
        }
        Ok(Some(Bytes::from(data)))
    }

    fn location(&self) -> String {
        format!("the blob store at {}", self.dir.display())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use harnessx_core::content::store::BlobSource;

    use super::*;

    #[test]
    fn a_blob_is_put_once_read_back_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let store = FolderBlobStore::open(dir.path().join("blobs")).unwrap();
        let data = Bytes::from_static(b"an image");
        let blob =
            StoredBlob { sha256: sha256_hex(&data), media_type: "image/png".into(), data: data.clone() };
        store.put(&blob).unwrap();
        store.put(&blob).unwrap();
        assert_eq!(std::fs::read_dir(store.path()).unwrap().count(), 1, "no temporary file left");
        assert_eq!(store.get(&blob.sha256).unwrap(), Some(data));

        std::fs::write(store.path().join(&blob.sha256), b"changed").unwrap();
        let error = store.get(&blob.sha256).unwrap_err().0;
        assert!(error.contains("is damaged"), "{error}");

        let gone = sha256_hex(b"gone");
        assert_eq!(store.get(&gone).unwrap(), None);
        let mut source: Arc<dyn BlobStore> = Arc::new(store.clone());
        assert_eq!(
            source.blob(&gone).unwrap_err().0,
            format!("blob sha256:{gone} is missing from the blob store at {}", store.path().display())
        );
        assert!(store.get("../etc/passwd").is_err());
    }
}
