//! `read_file` on an image (PNG, JPEG, GIF, WebP) or a PDF, told by its content: the file
//! read whole into a media part, within `max_media_bytes`, or refused with one line. Never
//! cut short: half an image is garbage to a provider.
//!
//! What it defends against:
//! - a huge or sparse file (4 GB of zeros after a PNG signature): the size comes from
//!   `fstat` on the descriptor already open, and is checked before anything more is read;
//!   the read then stops at that size plus one byte, so memory stays within the limit
//!   whatever the file does meanwhile;
//! - a file that changes while it is read: `fstat` before and after must agree (size,
//!   modification and change times, inode), the bytes read must be exactly the size seen,
//!   and they must still sniff as the same type; otherwise one line says it changed. This
//!   is a consistency check, not a lock: a rewrite of the same size within the
//!   filesystem's timestamp granularity can still pass, and gives the bytes as they were
//!   read;
//! - a signature on garbage, or a "bomb" whose header claims gigapixels:
//!   [`crate::media::check_image`] reads the header (nothing is decoded).
//!
//! The read goes through the descriptor `Target::open_file` opened, so it is as contained
//! as every other read.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use harnessx_core::content::Part;
use harnessx_core::{Parts, ToolError, ToolOutput};
use rustix::fs::Stat;
use serde_json::json;

use super::FsConfig;
use crate::fs::contain::{FsError, quoted};
use crate::fs::text::human_size;
use crate::media::{self, check_image, is_image};

/// Reads the file behind `reader` (nothing consumed yet, `before` its `fstat` at open)
/// whole as `media_type`, which [`media::sniff`] gave for its first bytes.
pub(super) fn read(
    cfg: &FsConfig,
    mut reader: BufReader<File>,
    before: &Stat,
    media_type: &'static str,
    display: &str,
) -> Result<ToolOutput, ToolError> {
    let shown = quoted(display);
    let size = u64::try_from(before.st_size).unwrap_or(0);
    let limit = cfg.max_media_bytes;
    if size > limit {
        return Err(ToolError::new(format!(
            "refused: {shown} is {media_type} of {} ({size} bytes), over the {} limit for images and documents; it is not read",
            human_size(size),
            human_size(limit)
        )));
    }
    let changed = || ToolError::new(format!("cannot read {shown}: it changed while it was read; try again"));
    // `size` is within the limit; one byte more tells a file that grew.
    let mut data = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    (&mut reader)
        .take(size + 1)
        .read_to_end(&mut data)
        .map_err(|e| FsError::new(format!("cannot read {shown}: {e}")))?;
    let after = rustix::fs::fstat(reader.get_ref()).map_err(|e| FsError::os(display, "read", e))?;
    if data.len() as u64 != size || !unchanged(before, &after) || media::sniff(&data) != Some(media_type) {
        return Err(changed());
    }
    let bytes = data.len();
    if is_image(media_type) {
        let (width, height) =
            check_image(media_type, &data).map_err(|why| ToolError::new(why.message(&shown, media_type)))?;
        let structured = json!({
            "path": display, "media_type": media_type, "bytes": bytes, "width": width, "height": height,
        });
        let content = format!("[image: {media_type}, {bytes} bytes] {shown}");
        return Ok(ToolOutput { content, structured_content: Some(structured), parts: Parts::new() }
            .with_part(Part::image(media_type, data)));
    }
    let name = Path::new(display).file_name().map(|n| n.to_string_lossy().into_owned());
    let structured = json!({"path": display, "media_type": media_type, "bytes": bytes});
    let content = format!("[file: {media_type}, {bytes} bytes] {shown}");
    Ok(ToolOutput { content, structured_content: Some(structured), parts: Parts::new() }
        .with_part(Part::file(media_type, name, data)))
}

/// Whether two `fstat`s of one descriptor show the same file content, as far as the
/// metadata tells.
fn unchanged(before: &Stat, after: &Stat) -> bool {
    (before.st_dev, before.st_ino, before.st_size) == (after.st_dev, after.st_ino, after.st_size)
        && (before.st_mtime, before.st_mtime_nsec) == (after.st_mtime, after.st_mtime_nsec)
        && (before.st_ctime, before.st_ctime_nsec) == (after.st_ctime, after.st_ctime_nsec)
}
