//! `run_bash` on the local sandbox: the shared cases.

mod sandbox_cases;

sandbox_cases!(Some(Arc::new(harnessx_builtin::sandbox::LocalSandbox::new()) as Arc<dyn Sandbox>));
