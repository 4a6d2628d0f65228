//! Takes the git revision the service is built from, for `GET /`'s `sha`.
//! `STRATA_SHA` set by the caller (the container build) wins; otherwise
//! `git rev-parse HEAD` when the sources are a git checkout and git is
//! there; otherwise `"unknown"`.

use std::path::Path;
use std::process::Command;

fn main() {
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
    // Build again when HEAD moves: HEAD itself, the branch it points at,
    // and packed refs.
    let git_dir = Path::new(git_dir);
    for file in ["HEAD", "packed-refs"] {
        println!("cargo:rerun-if-changed={}", git_dir.join(file).display());
    }
    if let Ok(head) = std::fs::read_to_string(git_dir.join("HEAD"))
        && let Some(reference) = head.trim().strip_prefix("ref: ")
    {
        println!("cargo:rerun-if-changed={}", git_dir.join(reference).display());
    }
    println!("cargo:rustc-env=STRATA_GIT_SHA={}", revision.trim());
}
