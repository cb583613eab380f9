//! `--attach FILE` (and `chat`'s `/attach FILE` line): files handed to the model with the
//! prompt. Each is read and checked before any request: an image (PNG, JPEG, GIF, WebP), a
//! PDF or audio (WAV, MP3), recognised by its content and not by its name, becomes a part
//! of that kind; UTF-8 text becomes a text part headed by the file's name. Anything else,
//! a file over `--max-attach-bytes` (default 20 MB) or one that cannot be read is a
//! one-line usage error (exit status 2).

use std::io::Read;
use std::path::{Path, PathBuf};

use clap::Args;
use harnessx::builtin::media;
use harnessx::content::{Part, sniff, sniff_audio};

use crate::error::CliError;

/// The most bytes a file attached may have by default: 20 MB.
pub(crate) const DEFAULT_MAX_ATTACH_BYTES: u64 = 20_000_000;

/// The attachment flags of `run` and `chat`.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct AttachArgs {
    /// Hand this file to the model with the prompt (repeatable): an image (PNG, JPEG, GIF,
    /// WebP), a PDF, audio (WAV, MP3) or UTF-8 text, recognised by its content. Any other
    /// file, or one over --max-attach-bytes, is refused before any request.
    #[arg(long = "attach", value_name = "FILE")]
    pub(crate) attach: Vec<PathBuf>,
    /// The most bytes a file attached may have (default 20 MB; a number, or with a
    /// suffix: 500kB, 20MB, 1GB, 5MiB).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub(crate) max_attach_bytes: Option<u64>,
}

impl AttachArgs {
    /// The limit in force.
    pub(crate) fn limit(&self) -> u64 {
        self.max_attach_bytes.unwrap_or(DEFAULT_MAX_ATTACH_BYTES)
    }

    /// The files attached, read and checked, in the order given.
    pub(crate) fn parts(&self) -> Result<Vec<Part>, CliError> {
        self.attach.iter().map(|path| load(path, self.limit()).map_err(CliError::Usage)).collect()
    }
}

/// Reads `path` as a part, within `limit` bytes. Errors are one line, naming the file.
pub(crate) fn load(path: &Path, limit: u64) -> Result<Part, String> {
    let shown = path.display();
    let refused = |why: String| format!("cannot attach {shown}: {why}");
    let file = std::fs::File::open(path).map_err(|e| refused(io_reason(&e)))?;
    let meta = file.metadata().map_err(|e| refused(io_reason(&e)))?;
    if meta.is_dir() {
        return Err(refused("it is a folder".into()));
    }
    if meta.is_file() && meta.len() > limit {
        let why = format!("{} is over the limit of {} (--max-attach-bytes)", human(meta.len()), human(limit));
        return Err(refused(why));
    }
    // Never more than the limit and one byte: a file that grows (or a pipe) stops there.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len().min(limit)).unwrap_or(0));
    (&file).take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(|e| refused(io_reason(&e)))?;
    if bytes.len() as u64 > limit {
        return Err(refused(format!(
            "it grew over the limit of {} (--max-attach-bytes) while it was read",
            human(limit)
        )));
    }
    // A file written while it was read is neither its old nor its new content.
    let after = file.metadata().map_err(|e| refused(io_reason(&e)))?;
    if meta.is_file()
        && (after.len() != meta.len()
            || after.modified().ok() != meta.modified().ok()
            || bytes.len() as u64 != after.len())
    {
        return Err(refused("it changed while it was read; try again".into()));
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    if let Some(media_type) = sniff(&bytes) {
        // An image's header must hold (nothing is decoded): a signature on garbage, or
        // one claiming gigapixels, is refused here rather than by the provider.
        if media::is_image(media_type)
            && let Err(invalid) = media::check_image(media_type, &bytes)
        {
            let said = invalid.message("it", media_type);
            let said = said.trim_start_matches("refused: ").trim_end_matches("; it is not read");
            return Err(refused(said.to_owned()));
        }
        return Ok(match media_type {
            "application/pdf" => Part::file(media_type, name, bytes),
            _ => Part::image(media_type, bytes),
        });
    }
    if let Some(media_type) = sniff_audio(&bytes) {
        return Ok(Part::audio(media_type, bytes));
    }
    match String::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => {
            let name = name.unwrap_or_else(|| shown.to_string());
            Ok(Part::text(format!("[file: {name}]\n{text}")))
        }
        _ => Err(refused(
            "not a type that can be attached (an image: PNG, JPEG, GIF, WebP; a PDF; audio: WAV, MP3; or UTF-8 text), by its content".into(),
        )),
    }
}

/// An I/O error as a reason.
fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// A size for a person: `20 MB`, `512 bytes`, `1.5 MB`.
pub(crate) fn human(bytes: u64) -> String {
    const UNITS: &[(u64, &str)] = &[(1_000_000_000, "GB"), (1_000_000, "MB"), (1_000, "kB")];
    for &(size, unit) in UNITS {
        if bytes >= size {
            let whole = bytes / size;
            let tenth = (bytes % size) * 10 / size;
            return if tenth == 0 { format!("{whole} {unit}") } else { format!("{whole}.{tenth} {unit}") };
        }
    }
    format!("{bytes} bytes")
}

/// A byte count: digits, optionally followed by `B`, `kB`/`KB`, `MB`, `GB` (powers of 1000)
/// or `KiB`, `MiB`, `GiB` (powers of 1024).
fn parse_bytes(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: u64 = number.parse().map_err(|_| format!("{text:?} is not a byte count (e.g. 20MB)"))?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" | "k" => 1_000,
        "mb" | "m" => 1_000_000,
        "gb" | "g" => 1_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        other => return Err(format!("unknown unit {other:?} (B, kB, MB, GB, KiB, MiB, GiB)")),
    };
    number.checked_mul(scale).ok_or_else(|| format!("{text:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_parse_with_units() {
        assert_eq!(parse_bytes("20000000"), Ok(20_000_000));
        assert_eq!(parse_bytes("20MB"), Ok(20_000_000));
        assert_eq!(parse_bytes("5MiB"), Ok(5 << 20));
        assert_eq!(parse_bytes("500kB"), Ok(500_000));
        assert!(parse_bytes("twenty").is_err());
        assert!(parse_bytes("5XB").is_err());
        assert!(parse_bytes("99999999999999999999GB").is_err());
    }

    #[test]
    fn sizes_read_as_a_person_says_them() {
        assert_eq!(human(20_000_000), "20 MB");
        assert_eq!(human(25_500_000), "25.5 MB");
        assert_eq!(human(999), "999 bytes");
    }
}
