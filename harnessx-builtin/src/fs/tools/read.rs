//! `read_file`: a text file's lines, numbered, a window at a time; an image or a PDF
//! (told by its content) whole, as a media part (`read_media`).

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read};

use harnessx_core::{ToolAnnotations, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{FsConfig, object, read_media};
use crate::fs::contain::{FsError, quoted};
use crate::fs::text::human_size;
use crate::media;

pub(super) const DESCRIPTION: &str = "Read a file. A text file's lines come back numbered (number, tab, text); \
use offset and limit to read a long file a window at a time. A PNG, JPEG, GIF or WebP image or a PDF \
(told by its content) comes back whole, as an image or a document you can see. Other binary files are not shown.";

/// Annotations: reading changes nothing (read-only, so not destructive), a repeated read
/// has no further effect (idempotent), and the tool stays inside the filesystem it is given,
/// a closed domain (not open world).
pub(super) const ANNOTATIONS: ToolAnnotations =
    ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false);

/// Lines returned when `limit` is not given.
pub(crate) const DEFAULT_LIMIT: u64 = 2000;

/// Bytes inspected for a NUL byte to tell binary files apart.
const BINARY_SNIFF: usize = 8192;

pub(super) fn schema() -> Value {
    object(
        json!({
            "path": {"type": "string", "description": "The file to read."},
            "offset": {"type": "integer", "minimum": 0,
                       "description": "Lines to skip before the first line returned; default 0 (the start)."},
            "limit": {"type": "integer", "minimum": 1,
                      "description": "Most lines to return; default 2000."},
        }),
        &["path"],
    )
}

#[derive(Deserialize)]
pub(super) struct Args {
    path: String,
    #[serde(default)]
    offset: u64,
    limit: Option<u64>,
}

pub(super) fn run(cfg: &FsConfig, args: Args) -> Result<ToolOutput, ToolError> {
    let target = cfg.scope.locate(&args.path)?;
    let (file, stat) = target.open_file()?;
    let shown = quoted(&target.display);
    let size = u64::try_from(stat.st_size).unwrap_or(0);
    let io_err = |e: std::io::Error| FsError::new(format!("cannot read {shown}: {e}"));
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let head = reader.fill_buf().map_err(io_err)?;
    if head.is_empty() {
        return Ok(ToolOutput::text(format!("{shown} is empty.")));
    }
    // By content, never by name: an SVG is text (and can carry script), not an image.
    if let Some(media_type) = media::sniff(head) {
        return read_media::read(cfg, reader, &stat, media_type, &target.display);
    }
    if head[..head.len().min(BINARY_SNIFF)].contains(&0) {
        return Ok(ToolOutput::text(format!(
            "{shown} is a binary file ({}); its content is not shown.",
            human_size(size)
        )));
    }
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    let budget = cfg.max_read_bytes;
    let mut out = String::new();
    let mut line = Vec::new();
    let mut line_no: u64 = 0;
    let mut used: u64 = 0;
    let mut returned: u64 = 0;
    let mut lossy = false;
    let mut stop_note = None;
    // Skip `offset` lines without keeping them.
    while line_no < args.offset {
        if read_line(&mut reader, &mut line, 0).map_err(io_err)?.is_none() {
            return Ok(ToolOutput::text(format!(
                "{shown} has {line_no} lines; offset {} is past the end.",
                args.offset
            )));
        }
        line_no += 1;
    }
    loop {
        if returned == limit {
            if !reader.fill_buf().map_err(io_err)?.is_empty() {
                stop_note = Some(format!(
                    "[more lines follow; call read_file again with offset={line_no} to continue]"
                ));
            }
            break;
        }
        let remaining = budget.saturating_sub(used);
        let keep = usize::try_from(remaining).unwrap_or(usize::MAX);
        let Some(full_len) = read_line(&mut reader, &mut line, keep).map_err(io_err)? else { break };
        line_no += 1;
        let cut = (line.len() as u64) < full_len;
        if cut && returned > 0 {
            // The read limit falls inside this line: leave it whole for the next call.
            stop_note = Some(format!(
                "[output stops at the read limit; call read_file again with offset={} to continue]",
                line_no - 1
            ));
            break;
        }
        let text = String::from_utf8_lossy(&line);
        lossy |= matches!(text, std::borrow::Cow::Owned(_)) && !cut;
        let _ = writeln!(out, "{line_no:>6}\t{}", text.trim_end_matches('\n'));
        returned += 1;
        used += line.len() as u64;
        if cut {
            // A single line longer than the read limit: shown cut short.
            stop_note = Some(format!(
                "[line {line_no} is cut short at the read limit; the file is {} in all]",
                human_size(size)
            ));
            break;
        }
        if used >= budget && !reader.fill_buf().map_err(io_err)?.is_empty() {
            stop_note = Some(format!(
                "[output stops at the read limit; call read_file again with offset={line_no} to continue]"
            ));
            break;
        }
    }
    if lossy {
        out.push_str("[the file is not valid UTF-8: invalid bytes are shown as \u{FFFD}]\n");
    }
    if let Some(note) = stop_note {
        out.push_str(&note);
        out.push('\n');
    }
    Ok(ToolOutput::text(out))
}

/// Reads one line (through its `\n`) keeping at most `keep` bytes of it in `line`.
/// Returns the line's full length, or `None` at the end of the file.
fn read_line<R: Read>(
    reader: &mut BufReader<R>,
    line: &mut Vec<u8>,
    keep: usize,
) -> std::io::Result<Option<u64>> {
    line.clear();
    let mut total: u64 = 0;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok((total > 0).then_some(total));
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        let room = keep.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let n = chunk.len();
        total += n as u64;
        reader.consume(n);
        if done {
            return Ok(Some(total));
        }
    }
}
