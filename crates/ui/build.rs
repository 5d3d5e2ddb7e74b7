//! The UI's files are built from `ui/` into `ui/dist` and checked in (docs/decisions/011-web-ui.md);
//! a checkout without them (a partial copy) still compiles, serving no UI.

fn main() {
    let dist = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui/dist");
    println!("cargo:rerun-if-changed={}", dist.display());
    if !dist.exists() {
        let _ = std::fs::create_dir_all(&dist);
    }
}
