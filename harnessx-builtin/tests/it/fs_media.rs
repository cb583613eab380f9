//! `read_file` on images and PDFs: the media part and its line, and hostile files (a 4 GB
//! sparse file, a signature on garbage, bombs, an SVG with script, a file that grows while
//! it is read), each a safe result or one line, with bounded memory.

use crate::common;

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::Env;
use harnessx_builtin::fs::{FilesystemOptions, Resolver};
use harnessx_core::ToolResult;
use harnessx_core::content::{Blob, Part};
use serde_json::json;

fn env() -> Env {
    Env::new(Resolver::Auto)
}

/// A PNG chunk: length, type, data, CRC-32 of type and data.
fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend((data.len() as u32).to_be_bytes());
    let mut crc = flate2::Crc::new();
    crc.update(kind);
    crc.update(data);
    out.extend(kind);
    out.extend(data);
    out.extend(crc.sum().to_be_bytes());
}

/// A real PNG (8-bit RGB) of `width` x `height`, its pixel data `rows` zlib-compressed
/// rows of zeros (fewer than `height` makes a broken image, more a bomb).
pub(crate) fn png(width: u32, height: u32) -> Vec<u8> {
    png_with_rows(width, height, height as usize)
}

/// A real PNG whose header claims 100,000 x 100,000 pixels (30 GB once decoded), its
/// data a small deflate stream of zeros.
pub(crate) fn png_bomb() -> Vec<u8> {
    png_with_rows(100_000, 100_000, 4)
}

fn png_with_rows(width: u32, height: u32, rows: usize) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = width.to_be_bytes().to_vec();
    ihdr.extend(height.to_be_bytes());
    ihdr.extend([8, 2, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let row = vec![0u8; 1 + 3 * width as usize];
    for _ in 0..rows {
        z.write_all(&row).unwrap();
    }
    chunk(&mut out, b"IDAT", &z.finish().unwrap());
    chunk(&mut out, b"IEND", b"");
    out
}

/// A real baseline JPEG: 8x8, one grey component, every coefficient zero, with one-code
/// Huffman tables (DC category 0 and end-of-block are both the code `0`).
pub(crate) fn jpeg() -> Vec<u8> {
    let mut out = b"\xFF\xD8".to_vec();
    out.extend(b"\xFF\xE0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00");
    out.extend(b"\xFF\xDB\x00\x43\x00");
    out.extend([1u8; 64]);
    out.extend(b"\xFF\xC0\x00\x0b\x08\x00\x08\x00\x08\x01\x01\x11\x00");
    for class in [0x00u8, 0x10] {
        out.extend(b"\xFF\xC4\x00\x14");
        out.push(class);
        out.push(1);
        out.extend([0u8; 15]);
        out.push(0);
    }
    out.extend(b"\xFF\xDA\x00\x08\x01\x01\x00\x00\x3f\x00");
    out.push(0b0011_1111);
    out.extend(b"\xFF\xD9");
    out
}

/// A real one-page PDF, its cross-reference table pointing at its objects.
fn pdf() -> Vec<u8> {
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 72 72] >>",
    ];
    let mut out = String::from("%PDF-1.4\n");
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.push_str(&format!("{} 0 obj\n{body}\nendobj\n", i + 1));
    }
    let xref = out.len();
    out.push_str(&format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1));
    for offset in offsets {
        out.push_str(&format!("{offset:010} 00000 n \n"));
    }
    out.push_str(&format!(
        "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
        objects.len() + 1
    ));
    out.into_bytes()
}

/// The one-pixel GIF.
const GIF: &[u8] = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;";

/// A real zip archive holding `mebibytes` MiB of zeros, deflated.
fn zip_of_zeros(mebibytes: usize) -> Vec<u8> {
    let size = mebibytes << 20;
    let block = vec![0u8; 1 << 20];
    let mut crc = flate2::Crc::new();
    let mut deflate = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    for _ in 0..mebibytes {
        crc.update(&block);
        deflate.write_all(&block).unwrap();
    }
    let data = deflate.finish().unwrap();
    let name = b"zeros.bin";
    // version 20, no flags, deflate, no time or date; the CRC and both sizes
    let mut common = vec![20, 0, 0, 0, 8, 0, 0, 0, 0, 0];
    common.extend(crc.sum().to_le_bytes());
    common.extend((data.len() as u32).to_le_bytes());
    common.extend((size as u32).to_le_bytes());
    common.extend((name.len() as u16).to_le_bytes());
    common.extend([0, 0]);
    let mut out = b"PK\x03\x04".to_vec();
    out.extend(&common);
    out.extend(name);
    out.extend(&data);
    let central = out.len();
    out.extend(b"PK\x01\x02\x14\x00");
    out.extend(&common);
    out.extend([0u8; 12]); // comment length, disk, attributes, local header offset 0
    out.extend(name);
    let central_len = out.len() - central;
    out.extend(b"PK\x05\x06\0\0\0\0\x01\0\x01\0");
    out.extend((central_len as u32).to_le_bytes());
    out.extend((central as u32).to_le_bytes());
    out.extend([0, 0]);
    out
}

fn write(env: &Env, rel: &str, content: &[u8]) {
    std::fs::write(env.root.join(rel), content).unwrap();
}

async fn read(env: &Env, path: &str) -> ToolResult {
    env.call("read_file", json!({"path": path})).await
}

/// The one media part of a successful result: its kind, media type and bytes.
fn medium(result: &ToolResult) -> (&'static str, &str, &[u8]) {
    assert!(!result.is_error, "{}", result.content);
    let [part] = &result.parts[..] else { panic!("one part expected: {:?}", result.parts) };
    let Some(Blob::Bytes(bytes)) = part.blob() else { panic!("bytes expected: {part:?}") };
    (part.kind(), part.media_type().unwrap(), bytes)
}

/// The process's peak resident memory, in bytes (`VmHWM`).
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

#[tokio::test]
async fn images_and_pdfs_come_back_whole_as_parts() {
    let env = env();
    let cases = [
        ("shot.png", png(3, 2), "image", "image/png"),
        ("photo.jpg", jpeg(), "image", "image/jpeg"),
        ("dot.gif", GIF.to_vec(), "image", "image/gif"),
        ("report.pdf", pdf(), "file", "application/pdf"),
        // By content, not by name: a PNG named .txt is a PNG.
        ("not-text.txt", png(1, 1), "image", "image/png"),
    ];
    for (name, bytes, kind, media_type) in cases {
        write(&env, name, &bytes);
        let result = read(&env, name).await;
        let (got_kind, got_type, got) = medium(&result);
        assert_eq!((got_kind, got_type), (kind, media_type), "{name}");
        assert_eq!(got, &bytes[..], "{name}: the part's bytes are the file's");
        assert_eq!(result.content, format!("[{kind}: {media_type}, {} bytes] `{name}`", bytes.len()));
    }
    let result = read(&env, "shot.png").await;
    let structured = result.structured_content.unwrap();
    assert_eq!((structured["width"].as_u64(), structured["height"].as_u64()), (Some(3), Some(2)));
    let result = read(&env, "report.pdf").await;
    let Part::File { name, .. } = &result.parts[0] else { panic!("a file part") };
    assert_eq!(name.as_deref(), Some("report.pdf"));
}

#[tokio::test]
async fn a_png_header_on_garbage_is_refused() {
    let env = env();
    let mut garbage = b"\x89PNG\r\n\x1a\n".to_vec();
    garbage.extend((0..4000u32).map(|i| (i * 7919 % 251) as u8));
    write(&env, "garbage.png", &garbage);
    assert_eq!(
        env.refused("read_file", json!({"path": "garbage.png"})).await,
        "refused: `garbage.png` starts like image/png but its header is not a valid image header; it is not read"
    );
    // A JPEG signature on garbage, and a PNG cut short after its signature.
    write(&env, "garbage.jpg", b"\xFF\xD8\xFF\x00 and then some text that is not a JPEG at all");
    write(&env, "short.png", b"\x89PNG\r\n\x1a\n");
    assert_eq!(
        env.refused("read_file", json!({"path": "garbage.jpg"})).await,
        "refused: `garbage.jpg` starts like image/jpeg but its header is not a valid image header; it is not read"
    );
    assert_eq!(
        env.refused("read_file", json!({"path": "short.png"})).await,
        "refused: `short.png` starts like image/png but its header is not a valid image header; it is not read"
    );
}

#[tokio::test]
async fn a_4gb_sparse_file_is_refused_quickly_with_bounded_memory() {
    let env = env();
    let before = peak_rss();
    let started = Instant::now();
    // A PNG signature (and a sane header) on 4 GB, and 4 GB of plain zeros.
    let mut file = std::fs::File::create(env.root.join("huge.png")).unwrap();
    file.write_all(&png(16, 16)).unwrap();
    file.set_len(4 << 30).unwrap();
    std::fs::File::create(env.root.join("zeros.png")).unwrap().set_len(4 << 30).unwrap();
    assert_eq!(
        env.refused("read_file", json!({"path": "huge.png"})).await,
        "refused: `huge.png` is image/png of 4.0 GiB (4294967296 bytes), over the 20.0 MiB limit for images and documents; it is not read"
    );
    let result = read(&env, "zeros.png").await;
    assert!(!result.is_error && result.parts.is_empty(), "{result:?}");
    assert_eq!(result.content, "`zeros.png` is a binary file (4.0 GiB); its content is not shown.");
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    let grown = peak_rss().saturating_sub(before);
    assert!(grown < 256 << 20, "peak memory grew by {grown} bytes");
}

#[tokio::test]
async fn media_over_the_limit_is_refused_never_cut() {
    let env = Env::with(Resolver::Auto, |o| FilesystemOptions { max_media_bytes: 1000, ..o });
    let mut big = pdf();
    big.resize(2048, b'\n');
    write(&env, "big.pdf", &big);
    write(&env, "small.png", &png(2, 2));
    assert_eq!(
        env.refused("read_file", json!({"path": "big.pdf"})).await,
        "refused: `big.pdf` is application/pdf of 2.0 KiB (2048 bytes), over the 1000 B limit for images and documents; it is not read"
    );
    assert_eq!(medium(&read(&env, "small.png").await).1, "image/png");
    // A `max_read_bytes` that is set bounds media too (the smaller limit applies).
    let env = Env::with(Resolver::Auto, |o| FilesystemOptions { max_read_bytes: 1000, ..o });
    write(&env, "big.pdf", &big);
    assert_eq!(
        env.refused("read_file", json!({"path": "big.pdf"})).await,
        "refused: `big.pdf` is application/pdf of 2.0 KiB (2048 bytes), over the 1000 B limit for images and documents; it is not read"
    );
}

#[tokio::test]
async fn bombs_are_refused_without_decompressing() {
    let env = env();
    // A zip of 64 MiB of zeros named .png: not an image by its content, so a binary file.
    let zip = zip_of_zeros(64);
    write(&env, "x.png", &zip);
    let result = read(&env, "x.png").await;
    assert!(!result.is_error && result.parts.is_empty(), "{result:?}");
    assert!(result.content.starts_with("`x.png` is a binary file ("), "{}", result.content);
    assert!(result.content.ends_with("); its content is not shown."), "{}", result.content);
    // A PNG claiming 100,000 x 100,000 pixels, and one within each side's limit but 400 M
    // pixels in all.
    write(&env, "bomb.png", &png_bomb());
    write(&env, "wide.png", &png_with_rows(20_000, 20_000, 4));
    assert_eq!(
        env.refused("read_file", json!({"path": "bomb.png"})).await,
        "refused: `bomb.png` is image/png of 100000x100000 pixels, outside the limits (1 to 50000 pixels a side, 100000000 in all); it is not read"
    );
    assert_eq!(
        env.refused("read_file", json!({"path": "wide.png"})).await,
        "refused: `wide.png` is image/png of 20000x20000 pixels, outside the limits (1 to 50000 pixels a side, 100000000 in all); it is not read"
    );
}

#[tokio::test]
async fn an_svg_with_script_is_text_never_an_image() {
    let env = env();
    let svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\">\n\
               <script>alert(document.cookie)</script>\n\
               <rect width=\"10\" height=\"10\"/>\n</svg>\n";
    write(&env, "logo.svg", svg.as_bytes());
    let result = read(&env, "logo.svg").await;
    assert!(!result.is_error, "{}", result.content);
    assert!(result.parts.is_empty(), "an SVG became a part: {:?}", result.parts);
    assert!(result.content.contains("     2\t<script>alert(document.cookie)</script>"), "{}", result.content);
}

// A writer appending while the file is read: each read is the file as it was at one
// moment, or the one-line error, never a mix and never a panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_growing_while_it_is_read_is_consistent_or_an_error() {
    let env = env();
    let path = env.root.join("grow.png");
    std::fs::write(&path, png(4, 4)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, path) = (stop.clone(), path.clone());
        std::thread::spawn(move || {
            let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
            let mut i = 0u32;
            while !stop.load(Ordering::Relaxed) && i < 200_000 {
                file.write_all(&[(i % 251) as u8; 97]).unwrap();
                i += 1;
            }
        })
    };
    let mut results = Vec::new();
    for _ in 0..40 {
        results.push(read(&env, "grow.png").await);
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let whole = std::fs::read(&path).unwrap();
    let changed = "cannot read `grow.png`: it changed while it was read; try again";
    let (mut ok, mut refused) = (0, 0);
    for result in &results {
        if result.is_error {
            assert_eq!(result.content, changed);
            refused += 1;
        } else {
            let (_, media_type, bytes) = medium(result);
            assert_eq!(media_type, "image/png");
            assert_eq!(bytes, &whole[..bytes.len()], "the bytes are the file as it was at one moment");
            ok += 1;
        }
    }
    assert_eq!(ok + refused, results.len());
}
