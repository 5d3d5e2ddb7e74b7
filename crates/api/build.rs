//! Records the commit the binary is built from, for `/info`: `TRAWL_COMMIT` when the build
//! environment sets it, else what git says of this checkout ("unknown" outside one).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}

fn main() {
    println!("cargo:rerun-if-env-changed=TRAWL_COMMIT");
    if std::env::var("TRAWL_COMMIT").is_ok_and(|c| !c.is_empty()) {
        return;
    }
    let Some(commit) = git(&["rev-parse", "--short=12", "HEAD"]) else {
        println!("cargo:rustc-env=TRAWL_COMMIT=unknown");
        return;
    };
    println!("cargo:rustc-env=TRAWL_COMMIT={commit}");
    // Build again when HEAD moves (a commit, a checkout).
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={git_dir}/HEAD");
        println!("cargo:rerun-if-changed={git_dir}/packed-refs");
        if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={git_dir}/{reference}");
        }
    }
}
