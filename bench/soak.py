"""The soak: Gatehouse held at 80 % of its measured capacity on the signed-in 10 KB page for a long run, while
members do what they really do beside it, on SQLite and on two PostgreSQL replicas behind nginx.

Beside the paced page load (wrk, in 10-second slices, each request of a connection `delay`ed to 80 % of the
capacity measured first): members signing in and out, portal views, upgrade flows (every step up to the profile,
then cancelled, so that the same members can go again), WebSockets held open and spoken on, and a 100 MB download
now and then. Every 10 s: the gateways' resident memory and open file descriptors, the slice's p99, and on
PostgreSQL its connections. Any error of any activity is counted.

Goals (docs/operations.md, "Soak"): no errors; RSS growth after the first minute at most 16 MB; the p99 of the last
5 minutes at most 1.2 times the first 5 (with a shorter run: its last and first fifths); descriptors and database
connections flat. The figures go to a JSON file and an SVG plot (`SOAK_OUT`, default docs/soak).

Usage: bench/soak.sh [minutes]   (30 by default; 2 for a quick check). STORES="sqlite replicas" by default; a run of
one setup replaces that setup's figures in the files and keeps the other's.
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import gatehouse
from gatehouse import ROOT, answers, free_port, wait_until
from replicas import start_nginx
from soak_parts import WebSocketEcho, activities, plot, provider_sign_in

MINUTES = float(sys.argv[2]) if len(sys.argv) > 2 else float(os.environ.get("MINUTES", "30"))
STORES = os.environ.get("STORES", "sqlite replicas").split()
OUT = Path(os.environ.get("SOAK_OUT", ROOT / "docs" / "soak"))
SLICE = 10
CONNECTIONS = 32  # the capacity run's, as in the peers' benchmark
# The paced load's: wrk waits whole milliseconds between a connection's requests, so the wait has to be long beside
# a millisecond for the rate to hold from slice to slice (with 32 connections the wait needed was half a millisecond,
# wrk's smallest is one, and a slice ran at one of two rates 25 % apart as wrk's timer happened to fall).
PACED_CONNECTIONS = 128
UNLIMITED = {"limit": 1_000_000, "period_seconds": 60}
PARAGRAPH = '<p>Gatehouse soak paragraph with some ordinary text in it, and a <a href="/page.html">link</a>.</p>\n'


def upstream(directory):
    """nginx serving the 10 KB page, a 100 MB file and a login that sets the app's cookie."""
    www = directory / "www"
    www.mkdir()
    (www / "page.html").write_text(
        "<!doctype html><html><head><title>Soak</title></head><body>" + PARAGRAPH * (10_000 // len(PARAGRAPH)) + "</body></html>")
    with open(www / "big.bin", "wb") as big:
        big.truncate(100 << 20)
    port = free_port()
    process = start_nginx(
        directory / "upstream",
        f"""
  types {{ text/html html; application/octet-stream bin; }}
  server {{
    listen 127.0.0.1:{port};
    root {www};
    keepalive_requests 100000;
    location = /login {{ add_header Set-Cookie "soak_session=abc123; Path=/; HttpOnly"; return 204; }}
  }}""",
        directory / "upstream.log",
    )
    wait_until(lambda: answers(f"http://127.0.0.1:{port}/page.html") == 200, "the upstream nginx did not answer")
    return process, f"http://127.0.0.1:{port}/"


def apps(upstream_url, websocket_url):
    return [{"slug": "bench", "name": "Bench", "upstream": upstream_url}, {"slug": "ws", "name": "Sockets", "upstream": websocket_url}]


def settings(upstream_url, websocket_url):
    """What both setups share: the apps, no per-address limits (every member comes from loopback), codes enough."""
    return {
        "apps": apps(upstream_url, websocket_url),
        "rate_limits": {"sign_in_starts": UNLIMITED, "callbacks": UNLIMITED, "username_checks": UNLIMITED},
        "registration": {"codes_per_member_per_hour": 100, "codes_per_phone_number_per_hour": 100},
    }


class Target:
    """One setup under soak: where members go, how they sign in, and the processes to sample."""

    def __init__(self, name, url, pids, sign_in, inboxes, logs, database_url=None, stop=None):
        self.name, self.url, self.pids, self.sign_in, self.inboxes = name, url, pids, sign_in, inboxes
        self.logs, self.database_url, self.stop = logs, database_url, stop


def sqlite_target(binary, directory, upstream_url, websocket_url):
    process, url, password = gatehouse.start(binary, directory, "soak-sqlite", upstream_url, settings=settings(upstream_url, websocket_url))
    accounts = ["alice", "bob", "olive"]
    return Target(
        "sqlite", url, lambda: [process.process.pid],
        lambda index: gatehouse.sign_in(url, password, account=accounts[index % len(accounts)]), lambda: [url],
        lambda: [process.log_path, directory / "upstream" / "error.log"], stop=process.stop)


def replicas_target(binary, upstream_url, websocket_url):
    sys.path.insert(0, str(ROOT / "scripts"))
    from replicas import ReplicaSet

    replicas = ReplicaSet(binary, extra={**settings(upstream_url, websocket_url), "log_level": "warning"}).start()
    return Target(
        "replicas", replicas.url, lambda: [replica.process.pid for replica in replicas.replicas],
        lambda index: provider_sign_in(replicas.url, ["kc-ada-0001", "kc-bob-0002"][index % 2]),
        lambda: [replicas.replica_url(index) for index in range(replicas.count)],
        lambda: [process.log_path for process in replicas.processes] + [replicas.directory / "nginx" / "error.log"],
        database_url=replicas.database_url,
        stop=replicas.stop)


def descriptors(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def database_connections(database_url):
    if not database_url:
        return None
    result = subprocess.run(["psql", database_url, "-Atc", "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"],
                            capture_output=True, text=True)
    return int(result.stdout.strip()) if result.returncode == 0 else None


def paced_script(directory, delay):
    """wrk's `delay()` waits whole milliseconds: each request waits the whole part of `delay` and one more with the
    fraction's probability, so that the mean wait is the one asked for and the pace can be set finer than a step."""
    whole = int(delay * 1000)
    fraction = delay * 1000 - whole
    script = directory / "pace.lua"
    script.write_text(
        f"function init(args) math.randomseed(os.time() + math.floor(os.clock() * 1e6)) end\n"
        f"function delay() if math.random() < {fraction:.4f} then return {whole + 1} end return {whole} end\n")
    return script


def wrk_slice(page, cookie, script, seconds, connections=CONNECTIONS):
    """One slice of paced load: req/s, p99 (ms), errors (non-2xx answers and socket errors) and wrk's lines on them."""
    command = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", "-H", "Sec-Fetch-Dest: document", "-H", f"Cookie: {cookie}"]
    if script:
        command += ["-s", str(script)]
    output = subprocess.run(command + [page], capture_output=True, text=True).stdout
    errors = sum(int(n) for n in re.findall(r"Non-2xx or 3xx responses: (\d+)", output))
    errors += sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", output.split("Socket errors:", 1)[1])) if "Socket errors" in output else 0
    value = re.search(r"^\s*99%\s+([\d.]+)(us|ms|s)\s*$", output, re.M)
    p99 = float(value.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[value.group(2)] if value else None
    rps = re.search(r"Requests/sec:\s+([\d.]+)", output)
    # Which kind, for the run's record: wrk's own lines about them.
    said = [line.strip() for line in output.splitlines() if "Socket errors" in line or "Non-2xx" in line]
    return (float(rps.group(1)) if rps else 0.0), p99, errors, said


def log_problems(paths):
    """The warnings and errors the gateways and nginx wrote, by message (times, ids and addresses left out), most
    frequent first: what the run's errors were, from the side that saw them."""
    counts = {}
    for path in paths:
        try:
            lines = Path(path).read_text(errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            if not re.search(r" (warning|error|critical) gatehouse:|\[(warn|error|crit|alert|emerg)\]", line):
                continue
            message = re.sub(r"^\S+ \S*|\b[0-9a-f]{16,}\b|\d+(\.\d+)*", "#", line)[:300]
            counts[message] = counts.get(message, 0) + 1
    return sorted(({"count": count, "line": line} for line, count in counts.items()), key=lambda item: -item["count"])[:30]


def soak(target, directory):
    member = target.sign_in(0)
    assert member.get(target.url + "/apps/bench/login", allow_redirects=False).status_code == 204
    cookie = f"gatehouse_session={member.cookies['gatehouse_session']}"
    page = target.url + "/apps/bench/page.html"
    capacity, _, errors, _ = wrk_slice(page, cookie, None, 10)
    assert errors == 0, f"the capacity run had {errors} errors"
    # Each connection waits `delay` before each request: the rate is connections / (delay + service time). The service
    # time is read again from every slice, so that the rate stays at the target as the gateway's answers speed up.
    target_rate = 0.8 * capacity
    delay = max(0.001, PACED_CONNECTIONS / target_rate - CONNECTIONS / capacity)
    script = paced_script(directory, delay)
    print(f"[{target.name}] capacity {capacity:,.0f} req/s; holding {0.8 * capacity:,.0f} req/s for {MINUTES:g} min", flush=True)

    done = threading.Event()
    failures = []
    workers = activities(target, done, failures)
    samples = []
    started = time.monotonic()
    try:
        while time.monotonic() - started < MINUTES * 60:
            rps, p99, errors, said = wrk_slice(page, cookie, script, SLICE, PACED_CONNECTIONS)
            if rps > 0:
                service = max(0.0, PACED_CONNECTIONS / rps - delay)
                # Half way to the new delay each slice: the rate settles instead of swinging around the target.
                delay = max(0.001, (delay + PACED_CONNECTIONS / target_rate - service) / 2)
                script = paced_script(directory, delay)
            sample = {
                "t": round(time.monotonic() - started), "rps": round(rps), "p99_ms": p99, "errors": errors,
                "rss_mib": [gatehouse.memory_mib(pid)["VmRSS"] for pid in target.pids()],
                "fds": [descriptors(pid) for pid in target.pids()], "db_connections": database_connections(target.database_url),
                "activity_errors": len(failures),
            }
            if said:
                sample["wrk_errors"] = said
            samples.append(sample)
            print(f"[{target.name}] {json.dumps(sample)}", flush=True)
    finally:
        done.set()
        for worker in workers:
            worker.join(timeout=30)
    return {
        "capacity": capacity, "samples": samples, "failures": failures[:50], "failure_count": len(failures),
        "log_problems": log_problems(target.logs()),
    }


def verdict(result):
    samples = result["samples"]
    # 5 minutes of 10-second samples, or a sixth of a shorter run; the first minute (warming up) left out.
    measured = [s for s in samples if s["t"] > 60] if len(samples) > 12 else samples
    window = max(1, len(measured) // 6 if MINUTES < 30 else 30)
    after_first_minute = [s for s in samples if s["t"] >= 60] or samples
    growth = max(sum(s["rss_mib"]) for s in after_first_minute) - sum(after_first_minute[0]["rss_mib"])
    # The windows' p99 as the median of their slices' (a 100 MB download now and then makes single slices jump).
    first = [s["p99_ms"] for s in measured[:window] if s["p99_ms"]]
    last = [s["p99_ms"] for s in measured[-window:] if s["p99_ms"]]
    p99_ratio = statistics.median(last) / statistics.median(first) if first and last else None
    errors = sum(s["errors"] for s in samples) + result["failure_count"]
    fds = [sum(s["fds"]) for s in samples]
    return {
        "errors": errors, "rss_growth_mib": growth, "p99_ratio_last_to_first": p99_ratio,
        "fds_min_max": [min(fds), max(fds)], "db_connections_min_max": [
            min(s["db_connections"] for s in samples if s["db_connections"] is not None),
            max(s["db_connections"] for s in samples if s["db_connections"] is not None)] if samples[0]["db_connections"] is not None else None,
        "met": errors == 0 and growth <= 16 and (p99_ratio or 0) <= 1.2,
    }


def earlier_results(stores):
    """The figures of the setups this run leaves out, from the last file (each with the run that made it), so that a
    run of one setup replaces that setup's figures only."""
    try:
        earlier = json.loads(Path(f"{OUT}.json").read_text())
    except (OSError, ValueError):
        return {}
    return {store: {"run": earlier["run"], **result} for store, result in earlier.get("results", {}).items() if store not in stores}


def main():
    binary = Path(sys.argv[1])
    directory = Path(tempfile.mkdtemp(prefix="gatehouse-soak-", dir="/tmp"))
    os.chmod(directory, 0o755)
    nginx, upstream_url = upstream(directory)
    echo = WebSocketEcho()
    results = {}
    try:
        for store in STORES:
            target = (sqlite_target(binary, directory, upstream_url, echo.url) if store == "sqlite"
                      else replicas_target(binary, upstream_url, echo.url))
            try:
                results[store] = soak(target, directory)
                results[store]["verdict"] = verdict(results[store])
            finally:
                target.stop()
    finally:
        echo.stop()
        nginx.stop()
        shutil.rmtree(directory, ignore_errors=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    meta = {"minutes": MINUTES, "cores": os.cpu_count(), "connections": CONNECTIONS, "paced_connections": PACED_CONNECTIONS, "slice_seconds": SLICE,
            "date": time.strftime("%Y-%m-%d")}
    for result in results.values():
        result["run"] = meta
    every = {**earlier_results(STORES), **results}
    Path(f"{OUT}.json").write_text(json.dumps({"run": meta, "results": every}, indent=1))
    Path(f"{OUT}.svg").write_text(plot(every, meta))
    for store, result in results.items():
        print(f"{store}: {json.dumps(result['verdict'])}")
    print(f"figures: {OUT}.json, plot: {OUT}.svg")
    if not all(result["verdict"]["met"] for result in results.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
