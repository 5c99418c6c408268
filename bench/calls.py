"""Calls through the gateway, measured: the time from bob's Accept to both videos playing, over 20 video calls
between two headless Chromium browsers with fake cameras, on a real Synapse, a real TURN server (coturn on loopback,
every call relayed by it) and a Gatehouse release build in development mode. "Playing": the page's connection is
`connected` and the other's `<video>` has a size and its time advances (as Tests/e2e/test_calls.py checks). Each
call is placed from alice's direct chat with bob; bob answers from the ring on a gateway page; alice hangs up.

Usage: bench/calls.sh   (GATEHOUSE_BIN=… to measure a binary built elsewhere; CALLS=20)
"""

import os
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "Tests" / "e2e"))

import pytest  # noqa: E402  (the e2e helpers' fixtures module needs it)
from selenium.webdriver.common.by import By  # noqa: E402

from conftest import start_browser, start_gateway  # noqa: E402
from test_browser_journey import path_of, wait  # noqa: E402
from test_calls import COTURN, MEDIA, call_state, direct_chat, ring  # noqa: E402
from test_chat_homeserver import SERVER_NAME, started_homeserver, stop_homeserver  # noqa: E402
from test_chats import upgrade  # noqa: E402
from test_upgrade_journey import sign_in  # noqa: E402

CALLS = int(os.environ.get("CALLS", "20"))
PLAYING = """var v = document.getElementById('remote-video'); var m = document.getElementById('main');
return m.getAttribute('data-connection') === 'connected' && v.videoWidth > 0 && v.currentTime > 0.2"""


def main():
    import subprocess
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="gatehouse-calls-bench-"))
    turn_port = subprocess.run(["bash", COTURN, "start", str(folder / "coturn")], capture_output=True, text=True, check=True).stdout.strip()
    os.environ["SYNAPSE_TURN_URI"] = f"turn:127.0.0.1:{turn_port}?transport=udp"
    os.environ["SYNAPSE_TURN_SECRET_FILE"] = str(folder / "coturn" / "turn_secret")
    homeserver = started_homeserver(folder / "synapse")
    chat = {
        "backend": "synapse", "homeserver_url": homeserver["url"], "server_name": SERVER_NAME,
        "admin_token_file": homeserver["token_file"], "jwt_secret_file": homeserver["jwt_secret_file"],
        "calls": {"relay_only": True, "candidate_networks": ["127.0.0.0/8"]},
    }
    (folder / "gateway").mkdir()
    gw = start_gateway(folder / "gateway", "dev", extra={"chat": chat})
    alice, bob = start_browser(MEDIA), start_browser(MEDIA)
    times = []
    try:
        names = ("a" + uuid.uuid4().hex[:8], "b" + uuid.uuid4().hex[:8])
        sign_in(alice, gw, "alice")
        upgrade(alice, gw, names[0], "+15550100001", "Alice Archer")
        sign_in(bob, gw, "bob")
        upgrade(bob, gw, names[1], "+15550100002", "Bob Baker")
        room = direct_chat(alice, bob, gw, names[1])
        for number in range(CALLS):
            bob.get(gw.url + "/calls")
            alice.get(gw.url + "/chats/room?id=" + room)
            alice.find_element(By.ID, "room-call-video").click()
            prompt = wait(bob, ring, timeout=30)
            accepted = time.monotonic()
            prompt.find_element(By.ID, "ring-accept").click()
            wait(bob, lambda b: path_of(b).startswith("/calls/call?id="))
            done = {}
            while len(done) < 2 and time.monotonic() - accepted < 30:
                for name, browser in (("alice", alice), ("bob", bob)):
                    if name not in done and browser.execute_script(PLAYING):
                        done[name] = time.monotonic()
                time.sleep(0.02)
            assert len(done) == 2, f"call {number + 1}: not both playing within 30 s"
            times.append(max(done.values()) - accepted)
            alice.find_element(By.ID, "call-hangup").click()
            wait(bob, lambda b: call_state(b) == "ended", timeout=20)
            print(f"call {number + 1}: {times[-1] * 1000:.0f} ms", flush=True)
    finally:
        alice.quit()
        bob.quit()
        gw.running.stop()
        stop_homeserver(homeserver)
        subprocess.run(["bash", COTURN, "stop", str(folder / "coturn")], check=False)
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * len(ordered)) - 1)]
    print(f"\nAccept to both videos playing over {len(times)} calls: p50 {statistics.median(times) * 1000:.0f} ms, "
          f"p95 {p95 * 1000:.0f} ms, slowest {ordered[-1] * 1000:.0f} ms")


if __name__ == "__main__":
    main()
