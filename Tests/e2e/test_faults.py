"""Faults, each with what a member sees and how soon (docs/operations.md, "When something fails"): apps that refuse,
stall, reset in the middle of a body or answer slowly; a reader that never reads; an upload over the limit that the app must never see complete.
A real upstream process of the test's own (a raw socket server, so that it can misbehave at the byte level)."""

import socket
import socketserver
import struct
import threading
import time

import pytest
import requests

from conftest import free_port, start_gateway

HTML = {"Accept": "text/html", "Sec-Fetch-Dest": "document"}
LIMIT = 1 << 20
SEND_TIMEOUT = 2


class Misbehaving(socketserver.BaseRequestHandler):
    """One upstream, several faults by path. `uploads` records what each upload delivered."""

    uploads = []
    stalled = []

    def handle(self):
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.request.recv(65536)
            if not chunk:
                return
            head += chunk
        head, rest = head.split(b"\r\n\r\n", 1)
        path = head.split(b" ")[1].decode()
        if path.startswith("/keepalive"):
            # Answers, keeps the connection, and closes it when the next request comes on it, unanswered: an app's
            # idle timeout that strikes as the gateway reuses the connection.
            self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            self.request.recv(65536)
            self.request.close()
        elif path.startswith("/stall"):
            self.stalled.append(self.request)
            time.sleep(30)
        elif path.startswith("/reset"):
            self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 1048576\r\n\r\n")
            self.request.sendall(b"r" * 65536)
            time.sleep(0.2)
            # An abortive close: RST, not FIN.
            self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.request.close()
        elif path.startswith("/upload"):
            self.record_upload(rest)
        elif path.startswith("/big"):
            size = 5 << 20
            self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n" % size)
            for _ in range(size // 65536):
                self.request.sendall(b"b" * 65536)
        else:
            self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")

    def record_upload(self, received):
        """Reads a chunked upload to its end, or until the gateway gives up on it; records bytes and completeness."""
        record = {"bytes": 0, "complete": False}
        self.uploads.append(record)
        buffer = received
        self.request.settimeout(10)
        try:
            while True:
                while b"\r\n" in buffer:
                    size_line, after = buffer.split(b"\r\n", 1)
                    size = int(size_line.split(b";")[0], 16)
                    if size == 0:
                        record["complete"] = True
                        self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nreceived")
                        return
                    if len(after) < size + 2:
                        break
                    record["bytes"] += size
                    buffer = after[size + 2:]
                chunk = self.request.recv(65536)
                if not chunk:
                    return
                buffer += chunk
        except (OSError, ValueError):
            return


@pytest.fixture
def upstream():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Misbehaving)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Misbehaving.uploads.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    for connection in Misbehaving.stalled:
        try:
            connection.close()
        except OSError:
            pass
    server.shutdown()


@pytest.fixture
def faulty(tmp_path, upstream):
    refused = f"http://127.0.0.1:{free_port()}/"  # nothing listens there
    extra = {
        "apps": [{"slug": "misbehaving", "name": "Misbehaving", "upstream": upstream}, {"slug": "down", "name": "Down", "upstream": refused}],
        "proxy": {"read_timeout_seconds": 2, "max_request_body_bytes": LIMIT},
        "listen": {"send_timeout_seconds": SEND_TIMEOUT},
    }
    gw = start_gateway(tmp_path, "dev", extra=extra)
    yield gw
    gw.running.stop()


def timed(call):
    started = time.monotonic()
    reply = call()
    return reply, time.monotonic() - started


def test_an_app_that_refuses_is_unreachable_at_once(faulty):
    member = faulty.member_session("alice")
    reply, took = timed(lambda: member.get(faulty.url + "/apps/down/", headers=HTML))
    assert reply.status_code == 502 and "The app cannot be reached" in reply.text
    assert took < 1.0, took  # a refused connection is known at once: no connect timeout


def test_an_app_that_never_answers_is_slow_not_down(faulty):
    member = faulty.member_session("alice")
    reply, took = timed(lambda: member.get(faulty.url + "/apps/misbehaving/stall", headers=HTML))
    assert reply.status_code == 504 and "The app is slow to answer" in reply.text and "cannot be reached" not in reply.text
    assert 1.5 < took < 4.0, took  # the read timeout (2 s), not more
    # Meanwhile and after, the gateway serves: the same app's other pages, and other members.
    assert member.get(faulty.url + "/apps/misbehaving/", headers=HTML).status_code == 200


def test_an_app_that_closes_a_kept_alive_connection_as_it_is_reused_costs_nothing(faulty):
    member = faulty.member_session("alice")
    # HEAD goes the application's way (the data plane takes GETs, and retries them the same way).
    for _ in range(4):
        assert member.head(faulty.url + "/apps/misbehaving/keepalive", headers=HTML).status_code == 200


def test_an_app_that_resets_mid_body_ends_the_download_visibly(faulty):
    member = faulty.member_session("alice")
    with pytest.raises(requests.exceptions.RequestException):
        reply = member.get(faulty.url + "/apps/misbehaving/reset", stream=True, timeout=10)
        # The head went out (200, its length); the body stops short and the connection closes: the browser shows a
        # failed download, never a truncated file passed off as whole.
        assert reply.status_code == 200
        received = sum(len(chunk) for chunk in reply.iter_content(65536))
        assert received < 1 << 20
        raise AssertionError(f"a cut body was delivered as complete ({received} bytes)")
    assert member.get(faulty.url + "/apps/misbehaving/", headers=HTML).status_code == 200
    samples = faulty.metrics()
    assert samples.get('gatehouse_upstream_failures_total{app="misbehaving",kind="reset"}', 0) >= 1


def test_a_slow_reader_gets_a_big_answer_whole_while_others_are_served(faulty):
    slow = faulty.member_session("alice")
    other = faulty.member_session("bob")
    reply = slow.get(faulty.url + "/apps/misbehaving/big", stream=True, timeout=30)
    received = 0
    for index, chunk in enumerate(reply.iter_content(65536)):
        received += len(chunk)
        if index < 20:
            time.sleep(0.05)  # a phone on a bad line
            if index == 10:
                quick, took = timed(lambda: other.get(faulty.url + "/apps/misbehaving/", headers=HTML))
                assert quick.status_code == 200 and took < 1.0
    assert received == 5 << 20


def test_a_reader_that_never_reads_is_let_go_after_the_send_timeout(faulty):
    member = faulty.member_session("alice")
    cookie = "; ".join(f"{name}={value}" for name, value in member.cookies.items())
    reader = socket.socket()
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    reader.connect(("127.0.0.1", faulty.port))
    reader.sendall(f"GET /apps/misbehaving/big HTTP/1.1\r\nHost: 127.0.0.1:{faulty.port}\r\nCookie: {cookie}\r\n\r\n".encode())
    time.sleep(SEND_TIMEOUT + 2)  # reads nothing: the gateway's buffers fill, then the send timeout runs out
    # Meanwhile others are served; then the reader finds its answer cut short and the connection closed.
    quick, took = timed(lambda: member.get(faulty.url + "/apps/misbehaving/", headers=HTML))
    assert quick.status_code == 200 and took < 1.0
    reader.settimeout(10)
    received = 0
    try:
        while chunk := reader.recv(65536):
            received += len(chunk)
    except ConnectionResetError:
        pass
    assert 0 < received < 5 << 20
    reader.close()


def test_an_upload_over_the_limit_never_reaches_the_app_complete(faulty):
    member = faulty.member_session("alice")

    def body():
        for _ in range(32):  # 2 MiB in 64 KiB chunks, twice the limit, without a length: chunked
            yield b"u" * 65536

    try:
        reply = member.post(faulty.url + "/apps/misbehaving/upload", data=body(), headers=HTML, timeout=20)
        assert reply.status_code == 413 and "larger than Gatehouse accepts" in reply.text
    except requests.exceptions.ConnectionError:
        pass  # the gateway may close the connection on an upload it stopped reading; the app side is what matters
    deadline = time.monotonic() + 5
    while not Misbehaving.uploads and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    # It did start upstream (the gateway streams uploads), stopped at the limit, and never with the end of the body.
    assert len(Misbehaving.uploads) == 1, Misbehaving.uploads
    assert not Misbehaving.uploads[0]["complete"] and Misbehaving.uploads[0]["bytes"] <= LIMIT, Misbehaving.uploads
    # Within the limit, the same upload arrives whole.
    small = member.post(faulty.url + "/apps/misbehaving/upload", data=iter([b"s" * 65536] * 4), headers=HTML, timeout=20)
    assert small.status_code == 200 and small.text == "received"
    assert Misbehaving.uploads[-1] == {"bytes": 4 * 65536, "complete": True}
