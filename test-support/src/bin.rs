//! Running a built binary (`env!("CARGO_BIN_EXE_harnessx")` in the tests that have it).

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The provider keys removed from every run unless a test sets them, so a developer's
/// own keys never reach a test (nor, through `XDG_CONFIG_HOME`, their configuration).
const PROVIDER_KEYS: [&str; 2] = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"];

/// A binary to run in a working folder, with an empty standard input unless given one.
#[derive(Debug, Clone)]
pub struct Binary {
    path: PathBuf,
    env: Vec<(String, String)>,
}

impl Binary {
    /// The binary at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into(), env: Vec::new() }
    }

    /// Sets an environment variable for every run.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    fn command<S: AsRef<OsStr>>(&self, dir: &Path, args: &[S]) -> Command {
        let mut command = Command::new(&self.path);
        command.args(args).current_dir(dir);
        for key in PROVIDER_KEYS {
            command.env_remove(key);
        }
        // No developer's own configuration file (`~/.config/harnessx/config.toml`) or
        // conversations reach a test, unless the test points these somewhere itself.
        let nowhere = std::env::temp_dir().join("harnessx-tests-no-user-folder");
        command.env("XDG_CONFIG_HOME", &nowhere).env("XDG_STATE_HOME", &nowhere);
        for (k, v) in &self.env {
            command.env(k, v);
        }
        command
    }

    /// Runs with `args` in `dir`, standard input empty.
    pub fn run<S: AsRef<OsStr>>(&self, dir: &Path, args: &[S]) -> Output {
        self.command(dir, args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", self.path.display()))
    }

    /// Runs with `args` in `dir`, writing `input` to its standard input.
    pub fn run_with_input<S: AsRef<OsStr>>(&self, dir: &Path, args: &[S], input: &[u8]) -> Output {
        self.run_measured(dir, args, input).0
    }

    /// As [`Binary::run_with_input`], also measuring how long the run took and its peak
    /// resident memory: `VmHWM` of `/proc/<pid>/status`, sampled every millisecond until
    /// the child exits (the high-water mark only grows, so the last sample is at most a
    /// millisecond's growth short of the true peak; 0 where `/proc` has no such line).
    pub fn run_measured<S: AsRef<OsStr>>(&self, dir: &Path, args: &[S], input: &[u8]) -> (Output, Measured) {
        let started = Instant::now();
        let mut child = self
            .command(dir, args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("running {}: {e}", self.path.display()));
        let mut stdin = child.stdin.take().expect("piped stdin");
        let input = input.to_vec();
        // Write from a thread so a child that fills its output pipe first cannot deadlock us.
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        let pid = child.id();
        let done = Arc::new(AtomicBool::new(false));
        let sampler = {
            let done = done.clone();
            std::thread::spawn(move || {
                let mut peak = 0;
                while !done.load(Ordering::Relaxed) {
                    if let Some(kib) = high_water_mark_kib(pid) {
                        peak = peak.max(kib);
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                peak
            })
        };
        let output = child.wait_with_output().expect("waiting for the child");
        let elapsed = started.elapsed();
        done.store(true, Ordering::Relaxed);
        writer.join().expect("stdin writer");
        let peak_rss_kib = sampler.join().expect("memory sampler");
        (output, Measured { elapsed, peak_rss_kib })
    }
}

/// How long a run took and the most memory it held.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    /// From spawning to exit.
    pub elapsed: Duration,
    /// Peak resident set size in KiB (`VmHWM`, sampled).
    pub peak_rss_kib: u64,
}

fn high_water_mark_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Standard output as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Standard output as JSON lines (one event per line, as `run --json` prints them).
pub fn json_lines(output: &Output) -> Vec<Value> {
    stdout(output).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}
