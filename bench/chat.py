"""The gateway's own chat, measured: a real Synapse (scripts/synapse, configured as docs/operations.md recommends) and
a Gatehouse release build in development mode with its chat on.

1. **Send to show**: alice sends 100 messages one after another through `/chats/send` (as her page's script does);
   bob's open room page listens on its event stream (`/chats/events?room=…`, as his browser's EventSource does). The
   time from the send leaving alice to the message arriving on bob's stream: p50 and p95. The gateway's CPU seconds
   over the 100 messages (both members' sync loops, the sends, the streams), per message.
2. **Idle**: 200 member sessions (each its own Matrix device and sync loop, made through the homeserver's JWT login)
   with a Chats page open (an event stream each) and nothing said for a minute: the gateway's resident memory before
   and after, and its CPU over that minute (the 200 long polls coming back every 25 s, the streams' pings every 20 s).
   The development provider has three members, so the sessions are alice's and bob's in turn: what the gateway holds
   and runs per session is the same as for 200 members.

Usage: bench/chat.sh   (GATEHOUSE_BIN=… to measure a binary built elsewhere; SESSIONS=200)
"""

import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import requests

import gatehouse
from gatehouse import ROOT, memory_mib, wait_until
from peers import cpu_seconds

SESSIONS = int(os.environ.get("SESSIONS", "200"))
MESSAGES = 100
SERVER_NAME = "chat.bench"
UNLIMITED = {"limit": 1_000_000, "period_seconds": 60}


def csrf_of(http, origin):
    return re.search(r'name="csrf" value="([^"]+)"', http.get(origin + "/chats").text).group(1)


def post(http, origin, path, fields, token=None):
    """A form as the chat's script posts it: the page's token in the body and the header, JSON asked for."""
    token = token or csrf_of(http, origin)
    return http.post(
        origin + path, data={"csrf": token, **fields},
        headers={"Origin": origin, "Accept": "application/json", "X-Gatehouse-CSRF": token}, allow_redirects=False)


class Stream:
    """One page's event stream, read on a thread of its own: each `message` event's arrival time by its text."""

    def __init__(self, http, origin, room=None):
        token = csrf_of(http, origin)
        url = origin + "/chats/events?csrf=" + token + (f"&room={requests.utils.quote(room)}" if room else "")
        self.response = http.get(url, stream=True, headers={"Accept": "text/event-stream"}, timeout=(10, None))
        assert self.response.status_code == 200, self.response.status_code
        self.arrived = {}
        self.opened = threading.Event()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        event = None
        try:
            for line in self.response.iter_lines(decode_unicode=True):
                if line.startswith("event: "):
                    event = line[7:]
                    self.opened.set()
                elif line.startswith("data: ") and event == "message":
                    # (The line comes rendered, its text inside the markup.)
                    for word in re.findall(r"bench-\d+-[0-9a-f]{6}", line):
                        self.arrived.setdefault(word, time.monotonic())
        except Exception:
            pass  # closed at the end

    def close(self):
        self.response.close()


def main():
    binary = os.environ.get("GATEHOUSE_BIN") or sys.argv[1]
    directory = Path(tempfile.mkdtemp(prefix="gatehouse-chat-bench-"))
    homeserver = directory / "synapse"
    script = str(ROOT / "scripts" / "synapse")
    environment = {key: value for key, value in os.environ.items() if not key.startswith("SYNAPSE_OIDC")}
    started = subprocess.run(["bash", script, "start", str(homeserver), "", SERVER_NAME], env=environment, capture_output=True, text=True)
    if started.returncode != 0:
        sys.exit(started.stderr)
    url = started.stdout.strip().splitlines()[-1]
    process = None
    streams = []
    try:
        settings = {
            "chat": {"backend": "synapse", "homeserver_url": url, "server_name": SERVER_NAME,
                     "admin_token_file": str(homeserver / "admin_token"), "jwt_secret_file": str(homeserver / "jwt_secret")},
            "rate_limits": {"sign_in_starts": UNLIMITED, "callbacks": UNLIMITED, "username_checks": UNLIMITED},
        }
        process, origin, password = gatehouse.start(binary, directory, "gatehouse", "http://127.0.0.1:9", settings=settings)
        pid = process.process.pid
        alice_name = "a" + uuid.uuid4().hex[:8]
        alice = gatehouse.sign_in(origin, password, "alice", register=(alice_name, "+15550100001"))
        bob_name = "b" + uuid.uuid4().hex[:8]
        bob = gatehouse.sign_in(origin, password, "bob", register=(bob_name, "+15550100002"))

        # The direct chat, accepted.
        opened = post(alice, origin, "/chats/direct", {"username": bob_name})
        room = requests.utils.unquote(opened.headers["Location"].split("id=", 1)[1])
        wait_until(lambda: post(bob, origin, "/chats/membership", {"room": room, "action": "join"}).status_code == 303, "bob never saw the invite")

        # 1. Send to show.
        listening = Stream(bob, origin, room)
        streams.append(listening)
        listening.opened.wait(10)
        times = []
        token = csrf_of(alice, origin)
        cpu_before = cpu_seconds(pid)
        for index in range(MESSAGES):
            text = f"bench-{index}-{uuid.uuid4().hex[:6]}"
            sent = time.monotonic()
            answer = post(alice, origin, "/chats/send", {"room": room, "text": text, "txn": uuid.uuid4().hex}, token)
            assert answer.status_code == 200, answer.status_code
            # The arrival is timed by the stream's reader as it comes; this only waits before the next send.
            wait_until(lambda: text in listening.arrived, f"{text} never reached bob's page", timeout=30)
            times.append((listening.arrived[text] - sent) * 1000)
        cpu_per_message = (cpu_seconds(pid) - cpu_before) / MESSAGES
        times.sort()
        p50, p95 = statistics.median(times), times[int(len(times) * 0.95) - 1]

        # 2. Idle sessions, each with a Chats page open.
        time.sleep(5)
        before = memory_mib(pid)["VmRSS"]
        for index in range(SESSIONS):
            member = gatehouse.sign_in(origin, password, "alice" if index % 2 == 0 else "bob")
            streams.append(Stream(member, origin))
        wait_until(lambda: all(stream.opened.is_set() for stream in streams), "not every page's stream opened", timeout=120)
        time.sleep(30)
        cpu_before, wall_before = cpu_seconds(pid), time.monotonic()
        time.sleep(60)
        idle_cpu = (cpu_seconds(pid) - cpu_before) / (time.monotonic() - wall_before) * 100
        after = memory_mib(pid)["VmRSS"]
        token = (homeserver / "admin_token").read_text().strip()
        devices = sum(
            len(requests.get(f"{url}/_synapse/admin/v2/users/@{name}:{SERVER_NAME}/devices", headers={"Authorization": "Bearer " + token})
                .json()["devices"])
            for name in (alice_name, bob_name))

        print(f"# {time.strftime('%Y-%m-%d')} · {os.cpu_count()} cores · Synapse on the same machine")
        print(f"send to show over {MESSAGES} messages: p50 {p50:.1f} ms, p95 {p95:.1f} ms (min {times[0]:.1f}, max {times[-1]:.1f})")
        print(f"gateway CPU per message: {cpu_per_message * 1000:.2f} ms")
        print(f"{SESSIONS} sessions idle with a Chats page open: RSS {before} MiB -> {after} MiB "
              f"(+{(after - before) * 1024 / SESSIONS:.0f} KiB per session), CPU {idle_cpu:.2f} % of one core; "
              f"Matrix devices on the homeserver: {devices} (one per session: {SESSIONS + 2})")
    finally:
        for stream in streams:
            stream.close()
        if process:
            process.kill()
        subprocess.run(["bash", script, "stop", str(homeserver)], check=False)


if __name__ == "__main__":
    main()
