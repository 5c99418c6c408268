"""The soak's members and its picture (bench/soak.py): a WebSocket echo app and client of the soak's own (no
packages), the activities that run beside the paced page load, sign-in at the replicas' provider, and the SVG plot."""

import base64
import hashlib
import os
import random
import re
import socket
import struct
import threading
import time
from urllib.parse import parse_qs, urlparse

import requests

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class WebSocketEcho:
    """An app that answers every WebSocket text message with the same text."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}/"
        self.running = True
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while self.running:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(connection,), daemon=True).start()

    def serve(self, connection):
        with connection:
            head = read_head(connection)
            key = re.search(rb"Sec-WebSocket-Key:\s*(\S+)", head, re.I)
            if not key:
                body = b"<html><body>sockets</body></html>"
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                return
            accept = base64.b64encode(hashlib.sha1(key.group(1) + GUID.encode()).digest())
            connection.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n")
            try:
                while True:
                    opcode, payload = read_frame(connection)
                    if opcode == 8:
                        return
                    connection.sendall(frame(opcode, payload, mask=False))
            except (OSError, ConnectionError):
                return

    def stop(self):
        self.running = False
        self.server.close()


def read_head(connection):
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = connection.recv(4096)
        if not chunk:
            raise ConnectionError("closed before the head ended")
        head += chunk
    return head


def read_exactly(connection, count):
    data = b""
    while len(data) < count:
        chunk = connection.recv(count - len(data))
        if not chunk:
            raise ConnectionError("closed in a frame")
        data += chunk
    return data


def read_frame(connection):
    first, second = read_exactly(connection, 2)
    length = second & 0x7F
    if length == 126:
        length = struct.unpack("!H", read_exactly(connection, 2))[0]
    elif length == 127:
        length = struct.unpack("!Q", read_exactly(connection, 8))[0]
    mask = read_exactly(connection, 4) if second & 0x80 else None
    payload = read_exactly(connection, length)
    if mask:
        payload = bytes(byte ^ mask[index % 4] for index, byte in enumerate(payload))
    return first & 0x0F, payload


def frame(opcode, payload, mask=True):
    header = bytes([0x80 | opcode])
    length = len(payload)
    marker = 0x80 if mask else 0
    header += bytes([marker | length]) if length < 126 else bytes([marker | 126]) + struct.pack("!H", length)
    if not mask:
        return header + payload
    key = os.urandom(4)
    return header + key + bytes(byte ^ key[index % 4] for index, byte in enumerate(payload))


def next_message(connection):
    """The next data frame, answering pings on the way (the gateway keeps idle WebSockets alive with them)."""
    while True:
        opcode, payload = read_frame(connection)
        if opcode == 9:
            connection.sendall(frame(10, payload))
        elif opcode != 10:
            return opcode, payload


def open_websocket(url, path, cookie):
    """A WebSocket through the gateway, with the member's cookie; the connected socket."""
    parsed = urlparse(url)
    connection = socket.create_connection((parsed.hostname, parsed.port), timeout=30)
    key = base64.b64encode(os.urandom(16)).decode()
    connection.sendall(
        f"GET {path} HTTP/1.1\r\nHost: {parsed.netloc}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
        f"Sec-WebSocket-Version: 13\r\nOrigin: {url}\r\nCookie: {cookie}\r\n\r\n".encode())
    head = read_head(connection)
    if not head.startswith(b"HTTP/1.1 101"):
        raise ConnectionError(f"no WebSocket: {head[:80]!r}")
    return connection


def provider_sign_in(url, subject):
    """A member signed in at the replicas' provider (oidc-provider-mock) through the balancer."""
    http = requests.Session()
    start = http.get(url + "/signin/start", allow_redirects=False, timeout=30)
    decision = http.post(start.headers["Location"], data={"sub": subject}, allow_redirects=False, timeout=30)
    callback = http.get(decision.headers["Location"], allow_redirects=False, timeout=30)
    if callback.status_code != 303 or "gatehouse_session" not in http.cookies:
        raise RuntimeError(f"sign-in at the provider failed: {callback.status_code}")
    return http


def activities(target, done, failures):
    """The members' own doings beside the paced load, each in a thread until `done`; what fails goes to `failures`."""

    def run(name, every, action):
        def loop():
            while not done.is_set():
                try:
                    action()
                except Exception as error:  # noqa: BLE001  (every failure of a member's doing is a finding)
                    failures.append(f"{time.strftime('%H:%M:%S')} {name}: {error}")
                done.wait(every * random.uniform(0.7, 1.3))

        thread = threading.Thread(target=loop, daemon=True, name=name)
        thread.start()
        return thread

    def expect(reply, status, what):
        if reply.status_code != status:
            raise RuntimeError(f"{what} answered {reply.status_code}")
        return reply

    counter = iter(range(1, 1 << 30))

    def sign_in_and_out():
        member = target.sign_in(next(counter))
        expect(member.get(target.url + "/", timeout=30), 200, "the portal")
        csrf = re.search(r'name="csrf" value="([^"]+)"', member.get(target.url + "/", timeout=30).text).group(1)
        expect(member.post(target.url + "/signout", data={"csrf": csrf}, headers={"Origin": target.url}, allow_redirects=False, timeout=30),
               303, "sign-out")

    browsing = target.sign_in(0)

    def portal_views():
        for path in ("/", "/chats", "/calls", "/stories", "/account/sessions"):
            expect(browsing.get(target.url + path, timeout=30), 200, path)

    flows = target.sign_in(1)

    def upgrade_flow():
        """Every step up to the profile, then cancel: the member stays at `sso` and can go again."""
        url = target.url
        expect(flows.get(url + "/upgrade?from=portal", allow_redirects=False, timeout=30), 303, "the upgrade entry")

        csrf = re.search(r'name="csrf" value="([^"]+)"', flows.get(url + "/", timeout=30).text).group(1)

        def post(path, fields, expected, required=True):
            reply = flows.post(url + path, data={"csrf": csrf, **fields}, headers={"Origin": url}, allow_redirects=False, timeout=30)
            if not reply.headers.get("Location", "").startswith(expected):
                if required:
                    raise RuntimeError(f"{path} answered {reply.status_code} {reply.headers.get('Location')!r}")
                return False
            return True

        post("/upgrade/phone", {"phone": "+15550100042"}, "/upgrade/code")
        # Each replica keeps the development inbox of the codes it sent: the newest of each is tried (the flow has
        # five tries; an older code of the other replica's costs one).
        codes = []
        for inbox in target.inboxes():
            found = re.search(r'class="code">(\d+)', flows.get(inbox + "/dev/inbox", timeout=30).text)
            if found:
                codes.append(found.group(1))
        if not any(post("/upgrade/code", {"code": code}, "/upgrade/username", required=False) for code in codes):
            raise RuntimeError(f"no inbox held the flow's code ({len(codes)} tried)")
        post("/upgrade/username", {"username": f"soak.{random.randrange(1 << 40)}"}, "/upgrade/pin")
        post("/upgrade/pin", {"pin": "2580", "pin_confirmation": "2580"}, "/upgrade/profile")
        post("/upgrade/cancel", {}, "/")

    sockets = target.sign_in(2)

    def websockets():
        """Eight WebSockets held open for a minute each, spoken on every few seconds."""
        cookie = f"gatehouse_session={sockets.cookies['gatehouse_session']}"
        opened = [open_websocket(target.url, "/apps/ws/", cookie) for _ in range(8)]
        try:
            for _ in range(12):
                for connection in opened:
                    message = os.urandom(8).hex().encode()
                    connection.sendall(frame(1, message))
                    answer = next_message(connection)
                    if answer != (1, message):
                        raise RuntimeError(f"the echo came back changed: {answer!r}")
                if done.wait(5):
                    break
        finally:
            for connection in opened:
                try:
                    connection.sendall(frame(8, b""))
                except OSError:
                    pass
                connection.close()

    downloader = target.sign_in(0)

    def download():
        with downloader.get(target.url + "/apps/bench/big.bin", stream=True, timeout=120) as reply:
            expect(reply, 200, "the 100 MB download")
            received = sum(len(chunk) for chunk in reply.iter_content(1 << 16))
        if received != 100 << 20:
            raise RuntimeError(f"the download ended at {received} bytes")

    return [
        run("sign-in and out", 2, sign_in_and_out), run("portal", 1, portal_views), run("upgrade flow", 40, upgrade_flow),
        run("websockets", 1, websockets), run("download", 120, download),
    ]


def plot(results, meta):
    """RSS, p99 and open descriptors over time, one panel each, a line per setup: a self-contained SVG."""
    width, height, left, top = 900, 620, 70, 40
    panels = [("RSS (MiB, all replicas)", lambda s: sum(s["rss_mib"])), ("p99 of the page (ms)", lambda s: s["p99_ms"] or 0),
              ("open descriptors (all replicas)", lambda s: sum(s["fds"]))]
    colours = {"sqlite": "#1f5fbf", "replicas": "#c25400"}
    panel_height = (height - top - 40) / len(panels)
    duration = max((result["samples"][-1]["t"] for result in results.values() if result["samples"]), default=1) or 1
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
             f'font-family="system-ui, sans-serif" font-size="12"><rect width="100%" height="100%" fill="#fff"/>',
             f'<text x="{left}" y="22" font-size="14" font-weight="700">Soak: {meta["minutes"]:g} min at 80 % of capacity, '
             f'{meta["cores"]} cores; sampled every {meta["slice_seconds"]} s</text>']
    for index, (title, value) in enumerate(panels):
        y0 = top + index * panel_height + 20
        h = panel_height - 40
        values = [value(s) for result in results.values() for s in result["samples"]] or [1]
        high = max(values) * 1.1 or 1
        parts.append(f'<text x="{left}" y="{y0 - 6}" font-weight="600">{title}</text>')
        parts.append(f'<rect x="{left}" y="{y0}" width="{width - left - 20}" height="{h}" fill="none" stroke="#c9ced8"/>')
        for fraction in (0, 0.5, 1):
            parts.append(f'<text x="{left - 6}" y="{y0 + h - fraction * h + 4:.0f}" text-anchor="end">{high * fraction:,.0f}</text>')
        for store, result in results.items():
            points = " ".join(f"{left + s['t'] / duration * (width - left - 20):.1f},{y0 + h - value(s) / high * h:.1f}" for s in result["samples"])
            parts.append(f'<polyline points="{points}" fill="none" stroke="{colours.get(store, "#333")}" stroke-width="1.5"/>')
    parts.append(f'<text x="{left}" y="{height - 12}">time (min) 0 … {duration / 60:.0f}</text>')
    for offset, store in enumerate(results):
        parts.append(f'<text x="{width - 220 + offset * 100}" y="{height - 12}" fill="{colours.get(store, "#333")}">— {store}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
