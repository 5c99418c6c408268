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


def test_sigterm_drains_keep_alive_load_losing_nothing(tmp_path):
    """During the drain readiness fails on new connections, members on kept-alive connections keep being answered
    (told `Connection: close`, so they reconnect), nothing is lost; after it the process exits 0."""
    drain = 2.0
    gw = start_gateway(tmp_path, "dev", extra={"listen": {"drain_seconds": int(drain), "shutdown_grace_seconds": 5}})
    try:
        member = gw.member_session("alice")
        outcomes, stop = [], threading.Event()

        def load():
            # One member's requests back to back on a kept-alive connection, each stamped with when it ended.
            while not stop.is_set():
                try:
                    reply = member.get(gw.url + "/", timeout=5)
                    outcomes.append((time.time(), reply.status_code, reply.headers.get("Connection", "")))
                except requests.RequestException as error:
                    outcomes.append((time.time(), None, repr(error)))
                    if gw.running.process.poll() is not None:
                        return

        workers = [threading.Thread(target=load) for _ in range(4)]
        for worker in workers:
            worker.start()
        time.sleep(1.0)
        signalled = time.time()
        gw.running.process.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        # A new connection during the drain is still taken, and told the gateway is not ready.
        assert requests.get(gw.url + "/readyz", timeout=2).status_code == 503
        assert gw.running.process.wait(timeout=20) == 0
        stop.set()
        for worker in workers:
            worker.join(timeout=10)
        during = [outcome for outcome in outcomes if signalled <= outcome[0] < signalled + drain - 0.2]
        assert during, "no request was answered during the drain"
        assert all(status == 200 for _, status, _ in during), [o for o in during if o[1] != 200][:3]
        # Answers that began before the signal was handled went out as they were; the rest say close.
        settled = [outcome for outcome in during if outcome[0] >= signalled + 0.2]
        assert settled and all(connection.lower() == "close" for _, _, connection in settled), [o for o in during][:8]
        before = [outcome for outcome in outcomes if outcome[0] < signalled]
        assert before and all(status == 200 for _, status, _ in before)
        log = gw.log()
        assert "draining: not ready" in log and "shutdown complete" in log
    finally:
        gw.running.stop()
