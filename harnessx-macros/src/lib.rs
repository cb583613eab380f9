//! The #[tool] and #[toolbox] macros (issue 3).
