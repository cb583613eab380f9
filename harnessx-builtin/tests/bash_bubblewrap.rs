//! `run_bash` in the bubblewrap sandbox: the shared cases, and what only a sandbox that
//! confines commands can promise.

mod sandbox_cases;

use harnessx_builtin::sandbox::BubblewrapSandbox;
use harnessx_test_support::system::ensure_debian_package;

/// A sandbox over a new temporary workspace; `None` (printed) only without apt-get.
fn bubblewrap() -> Option<BubblewrapSandbox> {
    ensure_debian_package("bubblewrap", "bwrap")?;
    Some(BubblewrapSandbox::new().expect("bubblewrap is installed, so the sandbox builds"))
}

sandbox_cases!(bubblewrap().map(|s| Arc::new(s) as Arc<dyn Sandbox>));
