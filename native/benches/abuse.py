#!/usr/bin/env python3
"""Abuse benchmark of the migration service's GraphQL endpoint.

Starts `strata` (release build) on SQLite with 200 KB of migrations on disk,
then runs CLIENTS concurrent clients for SECONDS, each sending worst-case
requests in turn:

  aliases     20,000 aliases of `sourceMigrations { contents }` (~1 MiB body)
  repeated    one field written 60,000 times (the validator's pairwise rule)
  batch       a batch of 10 operations, each 90 aliases of
              `sourceMigrations { contents }` (just under the complexity
              limit): every operation passes the limits, the contents budget
              stops the answer
  contents    40 aliases of `sourceMigrations { contents }`: 8,000,000 bytes
              of contents, just under the budget, answered in full
  introspect  a full introspection query with deep `ofType` nesting, 10 times
              in one batch
  bomb        24 nested fragments, each spreading the one before twice
              (1.6 KB; 2^25 fields once expanded): refused by the linear
              cost walk before the validator expands it
  spreads     the largest text the limits let through to the parser: a
              ~1 MiB body of 200,000 spreads of one fragment (spreads are no
              written fields), refused by the cost walk

Meanwhile a separate process asks `GET /health` every 50 ms. Reported: requests
per kind, how many were refused by a limit (LIMIT_EXCEEDED) or answered,
`/health` latency p50/p99/max, and the service's peak resident memory
(VmHWM from /proc). Goals (issue 16): peak RSS < 512 MB, /health p99 < 100 ms.

Usage: python3 native/benches/abuse.py [CLIENTS=20] [SECONDS=30]
Uses $STRATA (a built binary) if set, else builds the release binary.
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

CLIENTS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 30
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def build():
    if os.environ.get("STRATA"):
        return os.environ["STRATA"]
    target = os.environ.get("CARGO_TARGET_DIR", os.path.expanduser("~/.cache/strata-target"))
    subprocess.run(["cargo", "build", "--release", "-p", "strata-server", "--quiet"], cwd=ROOT, check=True,
                   env={**os.environ, "CARGO_TARGET_DIR": target})
    return os.path.join(target, "release", "strata")


def workspace(port):
    work = tempfile.mkdtemp(prefix="strata-abuse-")
    app = os.path.join(work, "migrations", "app")
    os.makedirs(app)
    # 100 files of 2,000 bytes: 200 KB of migrations.
    for i in range(100):
        filler = "-- " + "x" * (2000 - 4 - len(f"create table {{schema}}.t{i} (id integer primary key);\n")) + "\n"
        with open(os.path.join(app, f"{i:03}.sql"), "w") as f:
            f.write(filler + f"create table {{schema}}.t{i} (id integer primary key);\n")
    config = os.path.join(work, "svc.yaml")
    with open(config, "w") as f:
        f.write(f"baseLocation: {work}/migrations\ndriver: sqlite\n"
                f"dataSource: sqlite://{work}/db/main.db?mode=rwc\nsingleMigrations: [app]\n"
                f"port: {port}\nlogLevel: ERROR\n")
    return work, config


def post(url, body, timeout=120):
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.status, response.read()


def requests():
    aliases = "{ " + " ".join(f"a{i}: sourceMigrations {{ contents }}" for i in range(20_000)) + " }"
    repeated = "{ " + "tenants { name } " * 60_000 + "}"
    ninety = "{ " + " ".join(f"a{i}: sourceMigrations {{ contents }}" for i in range(90)) + " }"
    forty = "{ " + " ".join(f"a{i}: sourceMigrations {{ contents }}" for i in range(40)) + " }"
    type_ref = "kind name " + "ofType { kind name " * 7 + "}" * 7
    introspection = (
        "query { __schema { types { ...T } directives { name args { ...I } } } } "
        "fragment T on __Type { kind name fields(includeDeprecated: true) { name args { ...I } type { ...R } } "
        "inputFields { ...I } interfaces { ...R } enumValues(includeDeprecated: true) { name } possibleTypes { ...R } } "
        "fragment I on __InputValue { name type { ...R } defaultValue } "
        f"fragment R on __Type {{ {type_ref} }}"
    )
    bomb = "{ ...F24 } fragment F0 on Query { tenants { name } }" + "".join(
        f" fragment F{i} on Query {{ ...F{i - 1} ...F{i - 1} }}" for i in range(1, 25))
    spreads = "{ " + "...F " * 200_000 + "} fragment F on Query { versions { id } }"
    return {
        "bomb": json.dumps({"query": bomb}).encode(),
        "spreads": json.dumps({"query": spreads}).encode(),
        "aliases": json.dumps({"query": aliases}).encode(),
        "repeated": json.dumps({"query": repeated}).encode(),
        "batch": json.dumps([{"query": ninety}] * 10).encode(),
        "contents": json.dumps({"query": forty}).encode(),
        "introspect": json.dumps([{"query": introspection}] * 10).encode(),
    }


def classify(body):
    answers = json.loads(body)
    answers = answers if isinstance(answers, list) else [answers]
    codes = [e.get("extensions", {}).get("code") for a in answers for e in a.get("errors", [])]
    if any(code == "LIMIT_EXCEEDED" for code in codes):
        return "refused"
    if codes:
        return "error"
    return "answered"


def main():
    strata = build()
    port = 18000 + os.getpid() % 1000
    work, config = workspace(port)
    log = open(os.path.join(work, "strata.log"), "w")
    process = subprocess.Popen([strata], env={**os.environ, "SVC_YAML": config}, stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(base + "/health", timeout=1)
            break
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.1)
    post(base + "/v2/service", b'{"query":"mutation { createVersion(input: {versionName: \\"v1\\"}) { version { id } } }"}')

    bodies = requests()
    kinds = [k for k in bodies if k in os.environ.get("KINDS", ",".join(bodies)).split(",")]
    stop = time.monotonic() + SECONDS
    results = {kind: {"refused": 0, "error": 0, "answered": 0, "failed": 0, "seconds": []} for kind in kinds}
    lock = threading.Lock()
    health = []
    peak = [0]

    def client(index):
        n = index
        while time.monotonic() < stop:
            kind = kinds[n % len(kinds)]
            n += 1
            started = time.monotonic()
            try:
                status, body = post(base + "/v2/service", bodies[kind])
                outcome = classify(body) if status == 200 else "failed"
            except Exception:  # noqa: BLE001 - a dropped connection counts as a failure
                outcome = "failed"
            with lock:
                results[kind][outcome] += 1
                results[kind]["seconds"].append(time.monotonic() - started)

    # The prober is a process of its own, so that the clients' JSON work
    # (and Python's global lock) does not slow the measurement down.
    prober_code = (
        "import sys, time, urllib.request\n"
        "url, stop = sys.argv[1], time.monotonic() + float(sys.argv[2])\n"
        "while time.monotonic() < stop:\n"
        "    t = time.monotonic()\n"
        "    try:\n"
        "        urllib.request.urlopen(url, timeout=10).read(); print(time.monotonic() - t, flush=True)\n"
        "    except Exception:\n"
        "        print(10.0, flush=True)\n"
        "    time.sleep(0.05)\n"
    )
    prober_process = subprocess.Popen([sys.executable, "-c", prober_code, base + "/health", str(SECONDS)],
                                      stdout=subprocess.PIPE, text=True)

    # The clients run at the lowest priority: on a small machine they would
    # otherwise take the cores the service is measured on.
    os.nice(19)

    def prober():
        for line in prober_process.stdout:
            health.append(float(line))

    def sampler():
        while time.monotonic() < stop + 1:
            try:
                with open(f"/proc/{process.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            peak[0] = max(peak[0], int(line.split()[1]))
            except FileNotFoundError:
                return
            time.sleep(0.1)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    threads += [threading.Thread(target=prober), threading.Thread(target=sampler)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    alive = process.poll() is None
    process.terminate()
    process.wait(timeout=40)

    def pct(values, p):
        values = sorted(values)
        return values[min(len(values) - 1, int(len(values) * p))] if values else float("nan")

    print(f"{CLIENTS} clients for {SECONDS:.0f} s against {strata}")
    print(f"{'kind':<11} {'requests':>8} {'refused':>8} {'answered':>8} {'error':>6} {'failed':>6} {'p50 s':>7} {'p99 s':>7}")
    for kind in kinds:
        r = results[kind]
        total = r["refused"] + r["answered"] + r["error"] + r["failed"]
        print(f"{kind:<11} {total:>8} {r['refused']:>8} {r['answered']:>8} {r['error']:>6} {r['failed']:>6} "
              f"{pct(r['seconds'], 0.5):>7.3f} {pct(r['seconds'], 0.99):>7.3f}")
    print(f"/health: {len(health)} probes, p50 {pct(health, 0.5) * 1000:.1f} ms, "
          f"p99 {pct(health, 0.99) * 1000:.1f} ms, max {max(health) * 1000:.1f} ms")
    print(f"peak RSS (VmHWM): {peak[0] / 1024:.1f} MiB; service alive at the end: {alive}")


if __name__ == "__main__":
    main()
