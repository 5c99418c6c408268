"""Several Gatehouse replicas on one PostgreSQL behind nginx (round robin, no sticky sessions), signing in at a
separate OIDC provider process (oidc-provider-mock, Keycloak-shaped members), with the demo apps.

`scripts/replicas` runs it in the foreground (Ctrl-C stops everything); the end-to-end tests start and stop it
around a test, and kill or restart its parts.
"""

import base64
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLIENT_ID = "gatehouse-replicas"
CLIENT_SECRET = "replicas-client-secret"
# Members of the provider, with Keycloak's claim shapes.
MEMBERS = [
    {
        "sub": "kc-ada-0001",
        "name": "Ada Replica",
        "email": "ada@example.org",
        "preferred_username": "ada",
        "realm_access": {"roles": ["user"]},
        "groups": ["/staff"],
    },
    {"sub": "kc-bob-0002", "name": "Bob Replica", "email": "bob@example.org", "preferred_username": "bob", "groups": []},
]


_ports_given = set()


def _ephemeral_floor():
    """The lowest port the kernel hands to outgoing connections (their source ports)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port():
    """A port free now, below the kernel's ephemeral range and not given before in this process.

    Below the range, because a port the kernel handed out for `bind(0)` is in the range outgoing connections take their
    source ports from: between this check and the server's own bind, any connection the test makes (polling a gateway
    until it is up) may take it, and the server then dies with "address already in use" (Caddy did, on a busy CI
    machine). Never given before, because a gateway whose listener and metrics were given the same port refuses its
    configuration."""
    floor = _ephemeral_floor()
    low = max(1024, floor - 12000)
    while True:
        port = random.randrange(low, floor)
        if port in _ports_given:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _ports_given.add(port)
        return port


def answers(url, timeout=2.0):
    """The HTTP status `url` answers with, or None when nothing answers."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


def wait_until(condition, what, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} within {timeout} s")


class Process:
    """A child process writing to a log file of its own; stopped gracefully (SIGTERM), or killed."""

    def __init__(self, args, log_path, env=None, cwd=ROOT):
        self.name = Path(log_path).stem
        self.args = args
        self.env = env
        self.cwd = cwd
        self.log_path = Path(log_path)
        self.process = None
        self.start()

    def start(self):
        with open(self.log_path, "a") as log:
            self.process = subprocess.Popen(self.args, cwd=self.cwd, stdout=log, stderr=subprocess.STDOUT, env=self.env)

    def running(self):
        return self.process.poll() is None

    def output(self):
        return self.log_path.read_text(errors="replace")

    def kill(self):
        """SIGKILL: no graceful shutdown, as when a machine dies."""
        if self.running():
            self.process.kill()
        self.process.wait()

    def stop(self):
        if self.running():
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_nginx(work, http_block, log_path):
    """nginx in the foreground with its files under `work` (made here), `http_block` in its `http` block: started."""
    work.mkdir()
    os.chmod(work, 0o777)
    (work / "nginx.conf").write_text(
        f"""
daemon off;
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {work}/body;
  proxy_temp_path {work}/proxy;
  fastcgi_temp_path {work}/fastcgi;
  uwsgi_temp_path {work}/uwsgi;
  scgi_temp_path {work}/scgi;
{http_block}
}}
"""
    )
    return Process([shutil.which("nginx") or "/usr/sbin/nginx", "-p", str(work), "-c", str(work / "nginx.conf")], log_path)


class ReplicaSet:
    """PostgreSQL, the provider, `count` replicas and nginx in front of them, on loopback."""

    def __init__(self, binary, count=2, port=None, token_max_age=None, extra=None):
        self.binary = str(binary)
        self.count = count
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token_max_age = token_max_age
        self.extra = extra or {}
        self.storage_key = base64.b64encode(os.urandom(32)).decode()
        # Directly under /tmp, enterable by all: PostgreSQL runs as its own user when this runs as root.
        self.directory = Path(tempfile.mkdtemp(prefix="gatehouse-replicas-", dir="/tmp"))
        os.chmod(self.directory, 0o755)
        self.processes = []
        self.replicas = []
        self.replica_ports = []

    # -- the parts

    def start(self):
        try:
            self.database_url = self.postgres("start")
            self.start_provider()
            self.replica_ports = [free_port() for _ in range(self.count)]
            for index in range(self.count):
                self.replicas.append(self.start_replica(index))
            self.start_balancer()
        except BaseException:
            self.stop()
            raise
        return self

    def postgres(self, command):
        result = subprocess.run(
            [str(ROOT / "scripts" / "postgres"), command, str(self.directory / "postgres")],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        return result.stdout.strip()

    def start_provider(self):
        port = free_port()
        args = [sys.executable, "-m", "oidc_provider_mock", "--port", str(port), "--require-nonce", "true"]
        if self.token_max_age:
            args += ["--token-max-age", str(self.token_max_age)]
        for member in MEMBERS:
            args += ["--user-claims", json.dumps(member)]
        self.provider = Process(args, self.directory / "provider.log")
        self.processes.append(self.provider)
        self.issuer = f"http://127.0.0.1:{port}"
        wait_until(lambda: answers(self.issuer + "/.well-known/openid-configuration") == 200, "the provider did not answer")

    def replica_url(self, index):
        return f"http://127.0.0.1:{self.replica_ports[index]}"

    def start_replica(self, index):
        port = self.replica_ports[index]
        config = {
            "public_url": self.url,
            # nginx in front is the load balancer whose X-Forwarded-For names the client.
            # A short drain: nginx is told by each answer's `Connection: close`, no health check to wait for.
            "listen": {"host": "127.0.0.1", "port": port, "trusted_proxies": ["127.0.0.1"], "drain_seconds": 1},
            # Development mode for the demo apps (each replica runs its own copy); members sign in at the provider.
            "development": {"enabled": True, "demo_apps_port": free_port()},
            "metrics": {"port": free_port()},
            "oidc": {"issuer": self.issuer, "client_id": CLIENT_ID},
            "storage": {"kind": "postgres"},
            "directories": {
                "templates": str(ROOT / "Templates"),
                "public": str(ROOT / "Public"),
                "strings": str(ROOT / "Strings"),
                "data": str(self.directory / f"replica-{index + 1}"),
            },
            "log_level": "info",
        }
        config.update(self.extra)
        path = self.directory / f"replica-{index + 1}.json"
        path.write_text(json.dumps(config, indent=2))
        secret = self.directory / "client-secret"
        secret.write_text(CLIENT_SECRET + "\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GATEHOUSE_")}
        env["GATEHOUSE_STORAGE_POSTGRES_URL"] = self.database_url
        # One key for every replica: each opens what the others sealed.
        env["GATEHOUSE_STORAGE_ENCRYPTION_KEY"] = self.storage_key
        env["GATEHOUSE_OIDC_CLIENT_SECRET_FILE"] = str(secret)
        replica = Process([self.binary, "serve", "--config", str(path)], self.directory / f"replica-{index + 1}.log", env=env)
        self.processes.append(replica)
        wait_until(lambda: answers(self.replica_url(index) + "/readyz") == 200, f"replica {index + 1} was not ready")
        return replica

    def start_balancer(self):
        upstreams = "\n".join(f"    server 127.0.0.1:{port} max_fails=0;" for port in self.replica_ports)
        self.balancer = start_nginx(
            self.directory / "nginx",
            f"""
  # Round robin, every request on its own: no sticky sessions. WebSocket upgrades share the kept-alive
  # connections: Gatehouse upgrades on any request of a connection.
  upstream gatehouse {{
{upstreams}
    keepalive 32;
  }}
  map $http_upgrade $connection_upgrade {{ default upgrade; '' ''; }}
  server {{
    listen 127.0.0.1:{self.port};
    client_max_body_size 100m;
    location / {{
      proxy_pass http://gatehouse;
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_buffering off;
      proxy_next_upstream error timeout;
      proxy_read_timeout 120s;
    }}
  }}
""",
            self.directory / "nginx.log",
        )
        self.processes.append(self.balancer)
        wait_until(lambda: answers(self.url + "/healthz") == 200, "nginx did not answer")

    def stop(self):
        for process in reversed(self.processes):
            process.stop()
        self.processes.clear()
        try:
            self.postgres("stop")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.directory, ignore_errors=True)


def main():
    binary = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / ".build" / "debug" / "gatehouse"
    replicas = ReplicaSet(binary, port=int(os.environ.get("GATEHOUSE_REPLICAS_PORT", "8080"))).start()
    print(f"Gatehouse: {replicas.url}  (nginx, round robin over {', '.join(map(replicas.replica_url, range(replicas.count)))})")
    print(f"Provider: {replicas.issuer}  (oidc-provider-mock: sign in with a subject, e.g. kc-ada-0001 or kc-bob-0002)")
    print(f"PostgreSQL and logs: {replicas.directory}")
    print("Ctrl-C stops everything.")
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    try:
        while not stop and all(p.running() for p in replicas.processes):
            time.sleep(0.5)
        for process in replicas.processes:
            if not process.running():
                print(f"{process.name} exited; its log:\n{process.output()[-2000:]}", file=sys.stderr)
    except KeyboardInterrupt:
        pass
    finally:
        replicas.stop()


if __name__ == "__main__":
    main()
