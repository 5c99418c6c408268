"""The gateway's own chat, measured: a real Synapse (scripts/synapse, configured as docs/operations.md recommends) and
a Gatehouse release build in development mode with its chat on.

1. **Send to show**: alice sends 100 messages one after another through `/chats/send` (as her page's script does);
   bob's open room page listens on its event stream (`/chats/events?room=…`, as his browser's EventSource does). The
   time from the send leaving alice to the message arriving on bob's stream: p50 and p95. The gateway's CPU seconds
   over the 100 messages (both members' sync loops, the sends, the streams), per message. Alice writes from her
   room's page, whose stream is open throughout, as a member's is while they write.
2. **Send to notification**: bob works in an app (a background tab): his browser's one live stream
   (`/__gatehouse/live`, which the bar's tab that holds it reads for every tab of the origin) is all that listens;
   the time from the send to the `notify` event naming the message, p50 and p95, and the CPU per message. Ten tabs
   of one browser hold this one stream, so this is also the CPU with ten tabs open. Then bob with three pages open
   (the Chats list, the room, and an app's page with the bar: three streams): the CPU per message.
3. **Idle**: 200 member sessions (each its own Matrix device and sync loop, made through the homeserver's JWT login)
   with a Chats page open and notifications on (its event stream and the live stream each) and nothing said for a
   minute: the gateway's resident memory before and after, and its CPU over that minute (the 200 long polls coming
   back every 25 s, the streams' pings every 20 s).
   The development provider has three members, so the sessions are alice's and bob's in turn: what the gateway holds
   and runs per session is the same as for 200 members.

Usage: bench/chat.sh   (GATEHOUSE_BIN=… to measure a binary built elsewhere; SESSIONS=200)
"""

import json
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
    """One page's event stream, read on a thread of its own: each `message` event's arrival time by its text, each
    `notify` event's by the message's id. `live`: the live stream every page holds, not a chat page's."""

    def __init__(self, http, origin, room=None, live=False):
        if live:
            url = origin + "/__gatehouse/live"
        else:
            token = csrf_of(http, origin)
            url = origin + "/chats/events?csrf=" + token + (f"&room={requests.utils.quote(room)}" if room else "")
        self.response = http.get(url, stream=True, headers={"Accept": "text/event-stream"}, timeout=(10, None))
        assert self.response.status_code == 200, self.response.status_code
        self.arrived = {}
        self.notified = {}
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
                elif line.startswith("data: ") and event == "notify":
                    self.notified.setdefault(json.loads(line[6:])["id"], time.monotonic())
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
            # Every session's two streams come from this one address (the members' would come from theirs).
            "listen": {"max_connections_per_address": 10_000},
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

        # 1. Send to show. Alice writes from her room's page, which listens too (her session's loop runs, as it does
        # for a member who writes).
        writing = Stream(alice, origin, room)
        listening = Stream(bob, origin, room)
        streams.extend([writing, listening])
        writing.opened.wait(10)
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
        listening.close()

        # 2. Send to notification: bob's browser on an app's page, its one live stream; then three pages of his.
        def notified(pages):
            streams.extend(pages)
            for page in pages:
                page.opened.wait(10)
            live = pages[0]
            delays, cpu_at = [], cpu_seconds(pid)
            for index in range(MESSAGES):
                sent = time.monotonic()
                answer = post(alice, origin, "/chats/send", {"room": room, "text": f"note-{index}", "txn": uuid.uuid4().hex}, token)
                event_id = answer.json()["event_id"]
                wait_until(lambda: event_id in live.notified, f"note-{index} never notified bob", timeout=30)
                delays.append((live.notified[event_id] - sent) * 1000)
            used = (cpu_seconds(pid) - cpu_at) / MESSAGES
            for page in pages:
                page.close()
            delays.sort()
            return statistics.median(delays), delays[int(len(delays) * 0.95) - 1], delays[0], delays[-1], used

        time.sleep(5)
        one_stream = notified([Stream(bob, origin, live=True)])
        time.sleep(5)
        three_pages = notified([Stream(bob, origin, live=True), Stream(bob, origin), Stream(bob, origin, room)])

        # 3. Idle sessions, each with a Chats page open and notifications on.
        time.sleep(5)
        before = memory_mib(pid)["VmRSS"]
        for index in range(SESSIONS):
            member = gatehouse.sign_in(origin, password, "alice" if index % 2 == 0 else "bob")
            streams.append(Stream(member, origin))
            streams.append(Stream(member, origin, live=True))
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
        print(f"send to notification on bob's app page (one live stream, as ten tabs of a browser hold): p50 {one_stream[0]:.1f} ms, "
              f"p95 {one_stream[1]:.1f} ms (min {one_stream[2]:.1f}, max {one_stream[3]:.1f}); CPU per message {one_stream[4] * 1000:.2f} ms")
        print(f"bob with three pages open (the list, the room, an app's page): p50 {three_pages[0]:.1f} ms, p95 {three_pages[1]:.1f} ms; "
              f"CPU per message {three_pages[4] * 1000:.2f} ms")
        print(f"{SESSIONS} sessions idle with a Chats page open and notifications on: RSS {before} MiB -> {after} MiB "
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
