// The `harness-test-variants` binary (harness/Cargo.toml): the harness
// program itself, compiled with the `test-variants` feature under another
// name, so that it is built in the one target dir beside the production
// binary and never over it. A second `[[bin]]` on src/main.rs would do the
// same, but cargo warns about a file in two targets on every build.
include!("main.rs");
