//! Shared set-up for the filesystem tests: a temporary tree with a root, an outside
//! directory holding a secret, and a sibling whose name extends the root's.
#![allow(dead_code, reason = "each test file uses a different part of this module")]

use std::path::{Path, PathBuf};

use harnessx_builtin::fs::{FilesystemOptions, Resolver, register_filesystem_tools};
use harnessx_core::{ToolCall, ToolRegistry, ToolResult};
use serde_json::Value;

/// Text that only files outside the root hold: seeing it in any output is an escape.
pub(crate) const SECRET: &str = "OUTSIDE-SECRET-7f3a";

pub(crate) struct Env {
    pub(crate) tmp: tempfile::TempDir,
    pub(crate) root: PathBuf,
    pub(crate) outside: PathBuf,
    pub(crate) sibling: PathBuf,
    pub(crate) registry: ToolRegistry,
}

impl Env {
    pub(crate) fn new(resolver: Resolver) -> Self {
        Self::with(resolver, |o| o)
    }

    pub(crate) fn with(
        resolver: Resolver,
        tweak: impl FnOnce(FilesystemOptions) -> FilesystemOptions,
    ) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("data");
        let outside = base.join("outside");
        let sibling = base.join("data-evil");
        for d in [&root, &outside, &sibling] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
        std::fs::write(sibling.join("secret.txt"), SECRET).unwrap();
        let registry = ToolRegistry::new();
        let options = tweak(FilesystemOptions {
            base_path: Some(root.clone()),
            output_dir: Some(base.join("output")),
            resolver,
            ..Default::default()
        });
        register_filesystem_tools(&registry, options).unwrap();
        Self { tmp, root, outside, sibling, registry }
    }

    pub(crate) fn base(&self) -> &Path {
        self.root.parent().unwrap()
    }

    pub(crate) async fn call(&self, name: &str, args: Value) -> ToolResult {
        call(&self.registry, name, args).await
    }

    /// Calls and expects an error result that reveals no host path outside the root.
    pub(crate) async fn refused(&self, name: &str, args: Value) -> String {
        let r = self.call(name, args.clone()).await;
        assert!(r.is_error, "{name} {args} should be refused, got: {}", r.content);
        self.assert_no_leak(&r.content);
        r.content
    }

    pub(crate) async fn ok(&self, name: &str, args: Value) -> String {
        let r = self.call(name, args.clone()).await;
        assert!(!r.is_error, "{name} {args} failed: {}", r.content);
        self.assert_no_leak(&r.content);
        r.content
    }

    /// No output may carry the secret or a host path (the temp dir holds the root).
    pub(crate) fn assert_no_leak(&self, text: &str) {
        assert!(!text.contains(SECRET), "escape: outside content in {text:?}");
        let base = self.base().to_str().unwrap();
        assert!(!text.contains(base), "host path leaked in {text:?}");
    }

    pub(crate) fn outside_intact(&self) {
        assert_eq!(std::fs::read_to_string(self.outside.join("secret.txt")).unwrap(), SECRET);
        assert_eq!(std::fs::read_to_string(self.sibling.join("secret.txt")).unwrap(), SECRET);
        let names: Vec<_> =
            std::fs::read_dir(&self.outside).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["secret.txt"], "something was created outside the root");
    }
}

pub(crate) async fn call(registry: &ToolRegistry, name: &str, args: Value) -> ToolResult {
    registry.execute(&ToolCall::from_value("c1", name, &args), None).await
}

/// Both resolution strategies, so every containment test covers the openat2 path and the
/// component-by-component fallback.
pub(crate) const RESOLVERS: [Resolver; 2] = [Resolver::Openat2, Resolver::Walk];
