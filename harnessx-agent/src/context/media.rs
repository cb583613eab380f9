//! What media cost in tokens, by each provider's documented formula, for the context
//! window's estimate: a 4K screenshot is thousands of tokens whatever its bytes.
//!
//! - **OpenAI** (GPT-4o, GPT-4.1, GPT-5, o-series; detail `high`, which `auto` picks for
//!   large images): the image is scaled to fit 2048×2048, then its shortest side to 768;
//!   85 tokens plus 170 for each 512-pixel tile.
//! - **Anthropic**: the image is scaled to fit 1568 pixels on its long edge; width ×
//!   height / 750 tokens.
//! - **Gemini**: 258 tokens for an image of at most 384 pixels a side, else 258 for each
//!   768-pixel tile.
//!
//! A PDF is counted by its pages (the `/Type /Page` objects in it, at least one): about
//! 2,000 tokens a page for Anthropic and OpenAI (its text and an image of it, the middle
//! of Anthropic's documented 1,500-3,000), 258 for Gemini. Audio is counted by its length:
//! 32 tokens a second for Gemini, 10 for the others (a WAV's length read from its header,
//! other audio at 128 kbit/s). An image whose size cannot be read (a URL, a broken header)
//! counts as a 1024×1024 one.

use harnessx_core::content::{Blob, Part};

/// Whose formula media are counted with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MediaCost {
    /// OpenAI's tiles (also the default for other providers: the highest of the three for
    /// most images, so the window is not overrun).
    OpenAi,
    /// Anthropic's pixels / 750.
    Anthropic,
    /// Gemini's 258-token tiles.
    Gemini,
}

/// The size assumed for an image whose size cannot be read.
const UNKNOWN_SIZE: (u64, u64) = (1024, 1024);

impl MediaCost {
    /// The formula for a model, by its name (`anthropic:claude-...`, `gemini-2.5-pro`,
    /// `openai:gpt-4o`, ...).
    pub fn for_model(model: &str) -> Self {
        let name = model.to_ascii_lowercase();
        if name.starts_with("anthropic:") || name.contains("claude") {
            Self::Anthropic
        } else if name.starts_with("gemini:") || name.contains("gemini") {
            Self::Gemini
        } else {
            Self::OpenAi
        }
    }

    /// The tokens of one part that is not text (text parts are counted as text: 0 here).
    pub fn tokens(self, part: &Part) -> u64 {
        match part {
            Part::Text(_) => 0,
            Part::Image { data, .. } => self.image(image_size(data)),
            Part::File { media_type, data, .. } if media_type == "application/pdf" => {
                let per_page = if self == Self::Gemini { 258 } else { 2_000 };
                per_page * pdf_pages(data)
            }
            // Another document: its bytes as text would be.
            Part::File { data, .. } => (data.len() as u64).div_ceil(4),
            Part::Audio { data, .. } => {
                let per_second = if self == Self::Gemini { 32 } else { 10 };
                per_second * audio_seconds(data)
            }
        }
    }

    /// The tokens of an image of `width` × `height` pixels.
    pub fn image(self, (width, height): (u64, u64)) -> u64 {
        let (w, h) = (width.max(1), height.max(1));
        match self {
            Self::OpenAi => {
                let (w, h) = fit(w, h, 2048);
                let short = w.min(h);
                let (w, h) = if short > 768 { (w * 768 / short, h * 768 / short) } else { (w, h) };
                85 + 170 * w.div_ceil(512) * h.div_ceil(512)
            }
            Self::Anthropic => {
                let (w, h) = fit(w, h, 1568);
                (w * h).div_ceil(750)
            }
            Self::Gemini if w <= 384 && h <= 384 => 258,
            Self::Gemini => 258 * w.div_ceil(768) * h.div_ceil(768),
        }
    }
}

/// `w` × `h` scaled down (keeping its shape) so neither side passes `max`.
fn fit(w: u64, h: u64, max: u64) -> (u64, u64) {
    let long = w.max(h);
    if long <= max { (w, h) } else { ((w * max / long).max(1), (h * max / long).max(1)) }
}

/// An image's size from its header; [`UNKNOWN_SIZE`] when it cannot be read.
fn image_size(data: &Blob) -> (u64, u64) {
    let Blob::Bytes(bytes) = data else { return UNKNOWN_SIZE };
    match imagesize::blob_size(bytes) {
        Ok(size) if size.width > 0 && size.height > 0 => (size.width as u64, size.height as u64),
        _ => UNKNOWN_SIZE,
    }
}

/// The pages of a PDF: its `/Type /Page` objects (not `/Pages`), at least one.
fn pdf_pages(data: &Blob) -> u64 {
    let Blob::Bytes(bytes) = data else { return 1 };
    let mut pages = 0u64;
    for (i, _) in bytes.windows(5).enumerate().filter(|(_, w)| *w == b"/Type") {
        let rest = &bytes[i + 5..];
        let rest = &rest[rest.iter().take_while(|b| b.is_ascii_whitespace()).count()..];
        if rest.starts_with(b"/Page") && !rest.starts_with(b"/Pages") {
            pages += 1;
        }
    }
    pages.max(1)
}

/// The seconds of audio: a WAV's data over its byte rate, other audio at 128 kbit/s; at
/// least one.
fn audio_seconds(data: &Blob) -> u64 {
    let Blob::Bytes(bytes) = data else { return 1 };
    let rate = match bytes.get(28..32) {
        Some(rate) if bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WAVE" => {
            u64::from(u32::from_le_bytes([rate[0], rate[1], rate[2], rate[3]]))
        }
        _ => 16_000,
    };
    (bytes.len() as u64 / rate.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_cost_what_each_provider_documents() {
        // OpenAI's examples: 1024×1024 is 765 tokens, 2048×4096 is 1105.
        assert_eq!(MediaCost::OpenAi.image((1024, 1024)), 765);
        assert_eq!(MediaCost::OpenAi.image((2048, 4096)), 1105);
        // Anthropic's table: 1000×1000 is about 1334 tokens; 1092×1092 about 1590.
        assert_eq!(MediaCost::Anthropic.image((1000, 1000)), 1334);
        assert_eq!(MediaCost::Anthropic.image((1092, 1092)), 1590);
        assert_eq!(MediaCost::Anthropic.image((4000, 4000)), MediaCost::Anthropic.image((1568, 1568)));
        // Gemini: small images are 258; a 1000×1000 one four tiles.
        assert_eq!(MediaCost::Gemini.image((300, 200)), 258);
        assert_eq!(MediaCost::Gemini.image((1000, 1000)), 4 * 258);
    }

    #[test]
    fn models_get_their_provider_formula() {
        assert_eq!(MediaCost::for_model("anthropic:claude-sonnet-4-5"), MediaCost::Anthropic);
        assert_eq!(MediaCost::for_model("gemini:gemini-2.5-pro"), MediaCost::Gemini);
        assert_eq!(MediaCost::for_model("openai:gpt-4o"), MediaCost::OpenAi);
        assert_eq!(MediaCost::for_model("test"), MediaCost::OpenAi);
    }

    #[test]
    fn pdfs_count_pages_and_broken_media_get_a_fixed_size() {
        let pdf =
            b"%PDF-1.7\n1 0 obj <</Type /Pages>> 2 0 obj <</Type /Page>> 3 0 obj <</Type/Page>>".to_vec();
        let part = Part::file("application/pdf", Some("a.pdf".into()), pdf);
        assert_eq!(MediaCost::Anthropic.tokens(&part), 4_000);
        assert_eq!(MediaCost::Gemini.tokens(&part), 516);
        let broken = Part::image("image/png", b"\x89PNG\r\n\x1a\ngarbage".to_vec());
        assert_eq!(MediaCost::OpenAi.tokens(&broken), 765);
        assert_eq!(MediaCost::OpenAi.tokens(&Part::image_url("image/png", "https://e.x/a.png")), 765);
        assert_eq!(MediaCost::OpenAi.tokens(&Part::text("hi")), 0);
    }
}
