"""Gives each tracked file of a clean checkout the modification time it had
in the previous CI run when its content is the same (same git blob), and
records the times of this run for the next.

Cargo decides what to compile again by file times, and a fresh clone makes
every file new: with every cache of the last run present, each run compiled
the whole workspace (and the WebAssembly, fuzz and container builds) again.
A file whose content changed keeps the clone's time, newer than anything
built before, so what depends on it is compiled again; the others are as
old as the builds made from them. Runs only on a checkout without local
changes (the index then describes the files exactly).

Usage: python3 .ci/source-times.py MANIFEST
"""

import os
import subprocess
import sys


def tracked():
    """Each tracked regular file's path and blob id, from the index."""
    listing = subprocess.run(["git", "ls-files", "-s", "-z"], capture_output=True, check=True).stdout
    files = {}
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, path = entry.split(b"\t", 1)
        mode, blob = meta.split()[:2]
        if mode in (b"100644", b"100755"):
            files[os.fsdecode(path)] = blob.decode()
    return files


def recorded(manifest):
    """The previous run's `blob mtime_ns path` lines, by path."""
    times = {}
    try:
        with open(manifest, encoding="utf-8") as lines:
            for line in lines:
                blob, ns, path = line.rstrip("\n").split(" ", 2)
                times[path] = (blob, int(ns))
    except (FileNotFoundError, ValueError):
        return {}
    return times


def main():
    manifest = sys.argv[1]
    clean = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, check=True)
    if clean.stdout.strip():
        print("source times: the checkout has local changes; every file keeps its own time")
        return
    files = tracked()
    before = recorded(manifest)
    kept = 0
    for path, blob in files.items():
        previous = before.get(path)
        if previous and previous[0] == blob and os.path.isfile(path):
            os.utime(path, ns=(previous[1], previous[1]))
            kept += 1
    os.makedirs(os.path.dirname(manifest) or ".", exist_ok=True)
    with open(manifest + ".new", "w", encoding="utf-8") as out:
        for path, blob in files.items():
            if os.path.isfile(path):
                out.write(f"{blob} {os.stat(path).st_mtime_ns} {path}\n")
    os.replace(manifest + ".new", manifest)
    print(f"source times: {kept} of {len(files)} tracked files are as in the previous run and keep its times")


if __name__ == "__main__":
    main()
