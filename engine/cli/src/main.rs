//! The `tazuna` binary: everything lives in the library; this only runs it.

fn main() -> std::process::ExitCode {
    tazuna::run()
}
