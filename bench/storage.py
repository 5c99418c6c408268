"""Gatehouse on SQLite and on PostgreSQL, the same load on each:

1. a proxied 10 KB HTML page (session, jar with the app's cookie, CSP merge, rewriting, banner) with wrk:
   req/s, p50 and p99 (with the state cache the store is read only when something changed);
2. the gateway's resident memory with 10,000 live sessions, each signed in through the development provider and
   holding a small jar (the app's cookie), each used once so that it sits in the cache.

Usage: bench/storage.sh   (DURATION=10s CONNECTIONS=32 THREADS=2 SESSIONS=10000 to change it)
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

import gatehouse
from gatehouse import ROOT, Process, answers, free_port, wait_until

DURATION = os.environ.get("DURATION", "10s")
CONNECTIONS = os.environ.get("CONNECTIONS", "32")
THREADS = os.environ.get("THREADS", "2")
SESSIONS = int(os.environ.get("SESSIONS", "10000"))
PARAGRAPH = '<p>Gatehouse benchmark paragraph with some ordinary text in it, and a <a href="/page.html">link</a>.</p>\n'


def upstream(directory):
    """nginx serving the 10 KB page and a login that sets the app's cookie."""
    www = directory / "www"
    www.mkdir()
    body = PARAGRAPH * (10_000 // len(PARAGRAPH))
    (www / "page.html").write_text(f"<!doctype html><html><head><title>Bench</title></head><body>{body}</body></html>")
    port = free_port()
    (directory / "nginx.conf").write_text(
        f"""
daemon off;
worker_processes 1;
pid {directory}/nginx.pid;
error_log {directory}/nginx-error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  types {{ text/html html; }}
  server {{
    listen 127.0.0.1:{port};
    root {www};
    keepalive_requests 100000;
    location = /login {{ add_header Set-Cookie "bench_session=abc123; Path=/; HttpOnly"; return 204; }}
  }}
}}
"""
    )
    process = Process(["nginx", "-c", str(directory / "nginx.conf")], directory / "nginx.log")
    wait_until(lambda: answers(f"http://127.0.0.1:{port}/page.html") == 200, "nginx did not answer")
    return process, f"http://127.0.0.1:{port}/"


def sign_in(url, password):
    """A member signed in through the development provider, with the app's cookie in their jar; the cookie."""
    http = gatehouse.sign_in(url, password)
    login = http.get(url + "/apps/bench/login", allow_redirects=False)
    assert login.status_code == 204, f"the app's login answered {login.status_code}"
    return http.cookies["gatehouse_session"]


def measure(binary, directory, kind, upstream_url, database_url=None):
    # Every sign-in comes from this one address: the per-address sign-in limits would refuse all but the first few.
    unlimited = {"limit": 1_000_000, "period_seconds": 60}
    settings = {"rate_limits": {"sign_in_starts": unlimited, "callbacks": unlimited}}
    process, url, password = gatehouse.start(binary, directory, f"gatehouse-{kind}", upstream_url, kind, database_url, settings)
    try:
        cookie = sign_in(url, password)
        page = url + "/apps/bench/page.html"
        check = requests.get(page, headers={"Cookie": f"gatehouse_session={cookie}", "Sec-Fetch-Dest": "document"})
        assert check.status_code == 200 and "gatehouse-banner" in check.text, "the proxied page is not what is measured"
        measured = lambda: gatehouse.wrk(page, f"gatehouse_session={cookie}", THREADS, CONNECTIONS, DURATION)  # noqa: E731
        measured()  # warm-up
        rps, p50, p99 = measured()
        figures = {"req/s": rps, "50%": f"{p50:.2f}ms", "99%": f"{p99:.2f}ms"}
        before = gatehouse.memory_mib(process.process.pid)["VmRSS"]
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=8) as pool:
            cookies = list(pool.map(lambda _: sign_in(url, password), range(SESSIONS)))
        signed_in = time.monotonic() - started
        # Each session used once more, so that it and its jar sit in the cache.
        with ThreadPoolExecutor(max_workers=8) as pool:
            statuses = set(pool.map(lambda c: requests.get(page, headers={"Cookie": f"gatehouse_session={c}"}).status_code, cookies))
        assert statuses == {200}, statuses
        figures.update(rss_before=before, rss_sessions=gatehouse.memory_mib(process.process.pid)["VmRSS"], sign_in_seconds=signed_in)
        return figures
    finally:
        process.stop()


def main():
    binary = Path(sys.argv[1])
    directory = Path(tempfile.mkdtemp(prefix="gatehouse-bench-", dir="/tmp"))
    os.chmod(directory, 0o755)
    nginx, upstream_url = upstream(directory)
    postgres_dir = directory / "postgres"
    try:
        results = {"sqlite": measure(binary, directory, "sqlite", upstream_url)}
        database_url = subprocess.run(
            [str(ROOT / "scripts" / "postgres"), "start", str(postgres_dir)], capture_output=True, text=True, check=True
        ).stdout.strip()
        results["postgres"] = measure(binary, directory, "postgres", upstream_url, database_url)
    finally:
        subprocess.run([str(ROOT / "scripts" / "postgres"), "stop", str(postgres_dir)], capture_output=True)
        nginx.stop()
        shutil.rmtree(directory, ignore_errors=True)
    print(f"machine: {os.cpu_count()} cores, {os.uname().sysname} {os.uname().release}")
    print(f"load: wrk -t{THREADS} -c{CONNECTIONS} -d{DURATION}; {SESSIONS} sessions for the memory figure")
    print(f"{'store':10} {'req/s':>10} {'p50':>10} {'p99':>10} {'RSS idle':>10} {'RSS +sessions':>14}")
    for kind, f in results.items():
        print(
            f"{kind:10} {f['req/s']:>10,.0f} {f['50%']:>10} {f['99%']:>10} {f['rss_before']:>8.0f} MiB {f['rss_sessions']:>10.0f} MiB"
            f"   ({SESSIONS} sign-ins took {f['sign_in_seconds']:.0f} s)"
        )


if __name__ == "__main__":
    main()
