//! Takes the git revision the service is built from, for `GET /`'s `sha`.
//! `STRATA_SHA` set by the caller (the container build) wins; otherwise
//! `git rev-parse HEAD` when the sources are a git checkout and git is
//! there; otherwise `"unknown"`.
//!
//! Also passes `STRATA_LINK_ARGS` (arguments separated by spaces) to the
//! linker of the `strata` binary alone: the container build links the
//! image's binary with them (native/container/build.sh) without changing the
//! flags of any dependency, which would compile them all again.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=STRATA_LINK_ARGS");
    for argument in std::env::var("STRATA_LINK_ARGS").unwrap_or_default().split_whitespace() {
        println!("cargo:rustc-link-arg-bins={argument}");
    }
    println!("cargo:rerun-if-env-changed=STRATA_SHA");
    if std::env::var_os("STRATA_SHA").is_some() {
        return;
    }
    let output = Command::new("git").args(["rev-parse", "--git-dir", "HEAD"]).output();
    let Ok(output) = output else { return };
    if !output.status.success() {
        return;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let mut lines = text.lines();
    let (Some(git_dir), Some(revision)) = (lines.next(), lines.next()) else { return };
    // Build again when HEAD moves: HEAD itself, the directory holding the
    // branch it points at (a commit rewrites or creates the branch's file
    // there), and packed refs. Only paths that exist are watched: cargo
    // re-runs a build script on every build when a watched path is missing
    // (many clones have no packed-refs), which recompiled the server each
    // time.
    let git_dir = Path::new(git_dir);
    let mut watched = vec![git_dir.join("HEAD"), git_dir.join("packed-refs")];
    if let Ok(head) = std::fs::read_to_string(git_dir.join("HEAD"))
        && let Some(reference) = head.trim().strip_prefix("ref: ")
        && let Some(directory) = git_dir.join(reference).parent()
    {
        watched.push(directory.to_path_buf());
    }
    for path in watched.iter().filter(|path| path.exists()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    println!("cargo:rustc-env=STRATA_GIT_SHA={}", revision.trim());
}
