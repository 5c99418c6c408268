"""SIGTERM: no new connections, readiness fails, requests in flight finish within the grace period, exit 0."""

import http.server
import signal
import socketserver
import threading
import time

import requests

from conftest import start_gateway

CHUNK, CHUNKS, PAUSE = 65536, 10, 0.4


class SlowDownload(http.server.BaseHTTPRequestHandler):
    """An app whose download takes CHUNKS × PAUSE seconds."""

    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(CHUNK * CHUNKS))
        self.end_headers()
        for _ in range(CHUNKS):
            self.wfile.write(b"x" * CHUNK)
            self.wfile.flush()
            time.sleep(PAUSE)

    def log_message(self, *_):
        pass


def gateway_with_slow_app(tmp_path, grace):
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), SlowDownload)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    upstream = f"http://127.0.0.1:{server.server_address[1]}/"
    extra = {"apps": [{"slug": "files", "name": "Files", "upstream": upstream}], "listen": {"shutdown_grace_seconds": grace}}
    return server, start_gateway(tmp_path, "dev", extra=extra)


def download_in_background(session, url):
    result = {}

    def download():
        try:
            reply = session.get(url, stream=True, timeout=60)
            result["status"] = reply.status_code
            result["bytes"] = sum(len(chunk) for chunk in reply.iter_content(CHUNK))
        except requests.RequestException as error:
            result["error"] = repr(error)

    thread = threading.Thread(target=download)
    thread.start()
    return thread, result


def test_sigterm_lets_a_slow_download_finish_then_exits_zero(tmp_path):
    server, gw = gateway_with_slow_app(tmp_path, grace=30)
    try:
        member = gw.member_session("alice")
        thread, result = download_in_background(member, gw.url + "/apps/files/big.bin")
        time.sleep(1.0)  # the head and the first chunks are through
        gw.running.process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        # Draining: a new connection is refused, or answered "not ready"; never ready.
        try:
            ready = requests.get(gw.url + "/readyz", timeout=2).status_code
        except requests.ConnectionError:
            ready = None
        assert ready in (None, 503)
        thread.join(timeout=30)
        assert result == {"status": 200, "bytes": CHUNK * CHUNKS}
        assert gw.running.process.wait(timeout=30) == 0
        log = gw.log()
        assert "shutdown started" in log and "shutdown complete" in log
    finally:
        server.shutdown()
        gw.running.stop()


def test_the_grace_period_bounds_the_shutdown(tmp_path):
    server, gw = gateway_with_slow_app(tmp_path, grace=1)
    try:
        member = gw.member_session("alice")
        thread, result = download_in_background(member, gw.url + "/apps/files/big.bin")
        time.sleep(1.0)
        started = time.time()
        gw.running.process.send_signal(signal.SIGTERM)
        assert gw.running.process.wait(timeout=30) == 0
        assert time.time() - started < CHUNKS * PAUSE  # it did not wait for the download
        thread.join(timeout=30)
        assert result.get("bytes", 0) < CHUNK * CHUNKS  # the download was cut, and the log says so
        assert "requests still running after the grace period were cut" in gw.log()
    finally:
        server.shutdown()
        gw.running.stop()
