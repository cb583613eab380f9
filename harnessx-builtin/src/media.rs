//! Media a built-in tool hands the model (an image or a PDF `read_file` read, an image
//! `fetch_url` downloaded): what the bytes are, judged by their content, and a cheap check
//! that an image's header holds before it goes to a provider.
//!
//! The kind comes from [`sniff`] (the signature), never from a file name or a declared
//! type. An image is then checked beyond its signature: its header must parse and give
//! sane dimensions (at most [`MAX_IMAGE_SIDE`] pixels a side and [`MAX_IMAGE_PIXELS`] in
//! all). The dimensions are read from the header by `imagesize` (PNG's `IHDR`, JPEG's
//! `SOFn`, GIF's logical screen, WebP's `VP8 `/`VP8L`/`VP8X` chunk); nothing is decoded or
//! decompressed, so a "bomb" (a small file that claims gigapixels) costs a header read, and
//! what it claims is what refuses it. Beyond what `imagesize` looks at, a PNG's first chunk
//! must be a 13-byte `IHDR` and a WebP's lossy or lossless frame must carry its
//! signature, so a signature stuck on garbage is refused rather than sent on.
//!
//! SVG is never an image here: [`sniff`] does not recognise it, and it is text that can
//! carry script, so the tools treat it as text.

pub use harnessx_core::content::sniff;

/// The most pixels an image may have on a side.
pub const MAX_IMAGE_SIDE: u64 = 50_000;

/// The most pixels an image may have in all (100 million).
pub const MAX_IMAGE_PIXELS: u64 = 100_000_000;

/// Why an image was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// The header does not parse (cut short, or garbage after the signature).
    Header,
    /// The header parses, but claims dimensions past the limits (or zero).
    Dimensions(u64, u64),
}

impl Invalid {
    /// The refusal, one line naming `what` (a quoted path, a URL) and the sniffed type.
    pub fn message(&self, what: &str, media_type: &str) -> String {
        match self {
            Self::Header => format!(
                "refused: {what} starts like {media_type} but its header is not a valid image header; it is not read"
            ),
            Self::Dimensions(w, h) => format!(
                "refused: {what} is {media_type} of {w}x{h} pixels, outside the limits (1 to {MAX_IMAGE_SIDE} pixels a side, {MAX_IMAGE_PIXELS} in all); it is not read"
            ),
        }
    }
}

/// Whether `media_type` (from [`sniff`]) is one of the images tools pass on.
pub fn is_image(media_type: &str) -> bool {
    matches!(media_type, "image/png" | "image/jpeg" | "image/gif" | "image/webp")
}

/// Checks an image's header (see the module doc): its width and height, or why not.
/// `media_type` is what [`sniff`] said of `bytes`.
pub fn check_image(media_type: &str, bytes: &[u8]) -> Result<(u64, u64), Invalid> {
    if !structure_holds(media_type, bytes) {
        return Err(Invalid::Header);
    }
    let size = imagesize::blob_size(bytes).map_err(|_| Invalid::Header)?;
    let (mut width, height) = (size.width as u64, size.height as u64);
    if media_type == "image/webp" && bytes.get(15) == Some(&b' ') {
        // A lossy VP8 frame's 16-bit size fields carry a 2-bit scaling hint on top of
        // 14 bits of size; `imagesize` hands back all 16 bits of the width.
        width &= 0x3FFF;
    }
    let sane = (1..=MAX_IMAGE_SIDE).contains(&width)
        && (1..=MAX_IMAGE_SIDE).contains(&height)
        && width * height <= MAX_IMAGE_PIXELS;
    if sane { Ok((width, height)) } else { Err(Invalid::Dimensions(width, height)) }
}

/// The structure `imagesize` does not look at: a PNG's first chunk is a 13-byte `IHDR`
/// (the PNG spec requires it first), a WebP's lossy frame starts with the VP8 start code
/// and a lossless one with its signature byte.
fn structure_holds(media_type: &str, bytes: &[u8]) -> bool {
    match media_type {
        "image/png" => bytes.get(8..16) == Some(b"\0\0\0\x0dIHDR"),
        "image/webp" => match bytes.get(12..16) {
            Some(b"VP8 ") => bytes.get(23..26) == Some(b"\x9d\x01\x2a"),
            Some(b"VP8L") => bytes.get(20) == Some(&0x2f),
            Some(b"VP8X") => bytes.len() >= 30,
            _ => false,
        },
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PNG's signature and IHDR chunk (the CRC is not checked).
    fn png(width: u32, height: u32) -> Vec<u8> {
        let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        bytes.extend(width.to_be_bytes());
        bytes.extend(height.to_be_bytes());
        bytes.extend([8, 6, 0, 0, 0, 0, 0, 0, 0]);
        bytes
    }

    #[test]
    fn headers_give_the_dimensions() {
        assert_eq!(check_image("image/png", &png(640, 480)), Ok((640, 480)));
        let gif = b"GIF89a\x20\x00\x10\x00\x80\x00\x00";
        assert_eq!(check_image("image/gif", gif), Ok((32, 16)));
        // SOI, an APP0 segment, then SOF0 (precision 8, height 2, width 3).
        let jpeg = b"\xFF\xD8\xFF\xE0\x00\x04ab\xFF\xC0\x00\x0b\x08\x00\x02\x00\x03\x01\x01\x11\x00";
        assert_eq!(check_image("image/jpeg", jpeg), Ok((3, 2)));
        // VP8X: 24-bit width-1 and height-1 at 24 and 27.
        let mut webp = b"RIFF\0\0\0\0WEBPVP8X\x0a\0\0\0\0\0\0\0".to_vec();
        webp.extend([99, 0, 0, 49, 0, 0]);
        assert_eq!(check_image("image/webp", &webp), Ok((100, 50)));
        // VP8 (lossy): frame tag, start code, 14-bit sizes with a scaling hint on the width.
        let mut vp8 = b"RIFF\0\0\0\0WEBPVP8 \0\0\0\0\0\0\0\x9d\x01\x2a".to_vec();
        vp8.extend((0x4000u16 | 20).to_le_bytes());
        vp8.extend(10u16.to_le_bytes());
        assert_eq!(check_image("image/webp", &vp8), Ok((20, 10)));
    }

    #[test]
    fn a_signature_on_garbage_is_refused() {
        let mut garbage = b"\x89PNG\r\n\x1a\n".to_vec();
        garbage.extend((0..1000u32).map(|i| (i * 7919 % 251) as u8));
        assert_eq!(check_image("image/png", &garbage), Err(Invalid::Header));
        assert_eq!(check_image("image/png", b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR"), Err(Invalid::Header));
        assert_eq!(check_image("image/jpeg", b"\xFF\xD8\xFF\x00garbage garbage"), Err(Invalid::Header));
        assert_eq!(
            check_image("image/webp", b"RIFF\0\0\0\0WEBPVP8 \0\0\0\0\0\0\0\0\0\0\0\0\0\0"),
            Err(Invalid::Header)
        );
        assert_eq!(check_image("image/gif", b"GIF89a"), Err(Invalid::Header));
    }

    #[test]
    fn dimensions_past_the_limits_are_refused() {
        assert_eq!(check_image("image/png", &png(100_000, 10)), Err(Invalid::Dimensions(100_000, 10)));
        assert_eq!(check_image("image/png", &png(20_000, 20_000)), Err(Invalid::Dimensions(20_000, 20_000)));
        assert_eq!(check_image("image/png", &png(0, 10)), Err(Invalid::Dimensions(0, 10)));
        assert_eq!(
            check_image("image/png", &png(u32::MAX, u32::MAX)),
            Err(Invalid::Dimensions(4_294_967_295, 4_294_967_295))
        );
        assert_eq!(check_image("image/png", &png(50_000, 2_000)), Ok((50_000, 2_000)));
    }

    #[test]
    fn messages_are_one_line() {
        assert_eq!(
            Invalid::Header.message("`a.png`", "image/png"),
            "refused: `a.png` starts like image/png but its header is not a valid image header; it is not read"
        );
        assert_eq!(
            Invalid::Dimensions(100_000, 10).message("`a.png`", "image/png"),
            "refused: `a.png` is image/png of 100000x10 pixels, outside the limits (1 to 50000 pixels a side, 100000000 in all); it is not read"
        );
    }
}
