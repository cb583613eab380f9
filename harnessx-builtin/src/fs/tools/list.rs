//! `list_directory`: one directory's entries, sorted, bounded by `max_directory_entries`.

use std::collections::BinaryHeap;
use std::ffi::CString;
use std::fmt::Write as _;

use harnessx_core::{ToolAnnotations, ToolError, ToolOutput};
use rustix::fs::{AtFlags, FileType};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{FsConfig, object, optional_path};
use crate::fs::contain::{FsError, Kind, for_each_entry, kind_of, kind_of_type, quoted};
use crate::fs::text::{escape_path, human_size};

pub(super) const DESCRIPTION: &str = "List the entries of a directory, sorted by name: \
directories end with '/', files show their size, and other kinds are marked in brackets. \
Names with unusual characters are shown quoted and escaped.";

/// Annotations: listing a directory changes nothing (read-only, so not destructive),
/// repeats safely (idempotent), and stays inside the filesystem it is given (not open world).
pub(super) const ANNOTATIONS: ToolAnnotations =
    ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false);

pub(super) fn schema() -> Value {
    object(json!({"path": optional_path("The directory to list")}), &[])
}

#[derive(Deserialize)]
pub(super) struct Args {
    #[serde(default)]
    path: String,
}

pub(super) fn run(cfg: &FsConfig, args: Args) -> Result<ToolOutput, ToolError> {
    let target = cfg.scope.locate(&args.path)?;
    let dir = target.open_dir()?;
    let shown = quoted(&target.display);
    let max = cfg.max_directory_entries;
    let mut total = 0usize;
    // Keep the `max` smallest names, whatever the directory's size.
    let mut heap: BinaryHeap<(CString, FileTypeOrd)> = BinaryHeap::new();
    for_each_entry(&dir, |name, ftype| {
        total += 1;
        if heap.len() >= max && heap.peek().is_some_and(|(top, _)| top.as_c_str() <= name) {
            return;
        }
        heap.push((name.to_owned(), FileTypeOrd(ftype)));
        if heap.len() > max {
            heap.pop();
        }
    })
    .map_err(|e| FsError::os(&target.display, "list", e))?;
    let shown_entries = heap.into_sorted_vec();
    if total == 0 {
        return Ok(ToolOutput::text(format!("{shown} is empty.")));
    }
    let mut out = String::new();
    for (name, FileTypeOrd(ftype)) in &shown_entries {
        let display = escape_path(name.to_bytes());
        let stat = rustix::fs::statat(&dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW).ok();
        let kind = match (ftype, &stat) {
            (_, Some(s)) => kind_of(s),
            (t, None) => kind_of_type(*t),
        };
        let _ = match kind {
            Kind::Dir => writeln!(out, "{display}/"),
            Kind::File => {
                let size = stat.map_or(0, |s| u64::try_from(s.st_size).unwrap_or(0));
                writeln!(out, "{display}  ({})", human_size(size))
            }
            Kind::Symlink => writeln!(out, "{display}  [symlink]"),
            Kind::Special(what) => writeln!(out, "{display}  [{}]", what.trim_start_matches("a ")),
        };
    }
    if total > shown_entries.len() {
        let _ = writeln!(
            out,
            "[listing truncated: showing the first {} of {total} entries of {shown}, sorted by name; \
             use glob or a subdirectory to narrow it]",
            shown_entries.len()
        );
    }
    Ok(ToolOutput::text(out))
}

/// A `FileType` that sorts (entries are ordered by name; the type only breaks no ties).
#[derive(Clone, Copy, PartialEq, Eq)]
struct FileTypeOrd(FileType);

impl PartialOrd for FileTypeOrd {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for FileTypeOrd {
    fn cmp(&self, _other: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}
