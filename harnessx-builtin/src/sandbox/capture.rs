//! Reading a command's stdout and stderr together, in the order the bytes arrive, up to a
//! byte limit: memory stays bounded by the limit whatever the command writes.

use harnessx_core::{OutputChunk, OutputStream};
use tokio::io::{AsyncRead, AsyncReadExt};

const BUF: usize = 16 * 1024;

/// What [`Capture::pump`] stopped on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pump {
    /// Both streams are at their end.
    Eof,
    /// The limit was reached; the bytes past it were dropped.
    Limit,
}

/// Both output pipes of a command and what has been read from them.
/// One output pipe: a child's own, or a FIFO the local sandbox's shell writes to.
pub(crate) type Pipe = Box<dyn AsyncRead + Unpin + Send>;

pub(crate) struct Capture {
    stdout: Option<Pipe>,
    stderr: Option<Pipe>,
    chunks: Vec<(OutputStream, Vec<u8>)>,
    bytes: usize,
    limit: usize,
    truncated: bool,
    out_buf: Box<[u8]>,
    err_buf: Box<[u8]>,
}

impl Capture {
    pub(crate) fn new(stdout: Pipe, stderr: Pipe, limit: usize) -> Self {
        Self {
            stdout: Some(stdout),
            stderr: Some(stderr),
            chunks: Vec::new(),
            bytes: 0,
            limit,
            truncated: false,
            out_buf: vec![0; BUF].into_boxed_slice(),
            err_buf: vec![0; BUF].into_boxed_slice(),
        }
    }

    /// Whether there is nothing more to read (both ended, or the limit was reached).
    pub(crate) fn finished(&self) -> bool {
        self.truncated || (self.stdout.is_none() && self.stderr.is_none())
    }

    /// Whether output past the limit was dropped.
    pub(crate) fn truncated(&self) -> bool {
        self.truncated
    }

    /// Reads until both streams end or the limit is reached. Cancel-safe: a read that
    /// completed is recorded in the same poll.
    pub(crate) async fn pump(&mut self) -> Pump {
        loop {
            if self.truncated {
                return Pump::Limit;
            }
            // `biased`: when both streams have data, stdout's is taken first (which came
            // first is not knowable then), so the same output reads the same way each time.
            let (stream, n) = tokio::select! {
                biased;
                r = read_some(&mut self.stdout, &mut self.out_buf), if self.stdout.is_some() => (OutputStream::Stdout, r),
                r = read_some(&mut self.stderr, &mut self.err_buf), if self.stderr.is_some() => (OutputStream::Stderr, r),
                else => return Pump::Eof,
            };
            match n {
                // End of stream, or an error reading it (the pipe is gone): stop reading it.
                Ok(0) | Err(_) => match stream {
                    OutputStream::Stdout => self.stdout = None,
                    OutputStream::Stderr => self.stderr = None,
                },
                Ok(n) => {
                    let buf = match stream {
                        OutputStream::Stdout => &self.out_buf[..n],
                        OutputStream::Stderr => &self.err_buf[..n],
                    };
                    let room = self.limit - self.bytes;
                    let take = n.min(room);
                    let bytes = &buf[..take];
                    match self.chunks.last_mut() {
                        Some((last, text)) if *last == stream => text.extend_from_slice(bytes),
                        _ if take > 0 => self.chunks.push((stream, bytes.to_vec())),
                        _ => {}
                    }
                    self.bytes += take;
                    if take < n {
                        self.truncated = true;
                        // Close the pipes: a writer still going gets SIGPIPE.
                        self.stdout = None;
                        self.stderr = None;
                        return Pump::Limit;
                    }
                }
            }
        }
    }

    /// The output read, each chunk decoded as UTF-8 (invalid bytes replaced).
    pub(crate) fn into_chunks(self) -> Vec<OutputChunk> {
        self.chunks
            .into_iter()
            .map(|(stream, bytes)| OutputChunk { stream, text: String::from_utf8_lossy(&bytes).into_owned() })
            .collect()
    }
}

/// One read from a pipe (`select!`'s precondition keeps closed pipes out).
async fn read_some<R: AsyncReadExt + Unpin>(pipe: &mut Option<R>, buf: &mut [u8]) -> std::io::Result<usize> {
    match pipe {
        Some(p) => p.read(buf).await,
        None => std::future::pending().await,
    }
}
