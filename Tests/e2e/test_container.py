"""The container image (`scripts/build-image`), built from this build's binary and run with podman as an operator
would: its configuration from a mounted file and the environment, secrets as mounted files, a member signed in
through it against a real OIDC provider, its HEALTHCHECK healthy, a non-root user, a graceful stop. Skipped (with
the reason) where podman is missing; `scripts/setup --test` installs it, so CI runs it."""

import json
import os
import shutil
import subprocess
import time
import uuid

import pytest
import requests

from conftest import BINARY, CLIENT_ID, KIM, ROOT, free_port, storage_key
from replicas import answers
from test_step_up import serve_app, through_provider

PODMAN = shutil.which("podman")
pytestmark = pytest.mark.skipif(PODMAN is None, reason="podman is not installed (scripts/setup --test installs it)")
ENV = dict(os.environ, CONTAINERS_CONF=str(ROOT / "deploy" / "container" / "containers.conf"))


def podman(*args, check=True, timeout=120):
    return subprocess.run([PODMAN, *args], env=ENV, capture_output=True, text=True, check=check, timeout=timeout)


@pytest.fixture(scope="module")
def image():
    tag = f"localhost/gatehouse-e2e:{uuid.uuid4().hex[:8]}"
    built = subprocess.run(
        [str(ROOT / "scripts" / "build-image"), tag], env=dict(ENV, GATEHOUSE_BIN=str(BINARY)), capture_output=True, text=True,
        timeout=900)
    assert built.returncode == 0, built.stderr[-3000:]
    yield tag
    podman("rmi", "-f", tag, check=False)


def test_the_image_serves_a_member_with_its_mounted_configuration(image, tmp_path, mock_idp):
    app = serve_app()
    port = free_port()
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "client-secret").write_text("e2e-client-secret\n")
    shutil.copy(storage_key(tmp_path), secrets / "storage.key")
    for secret in secrets.iterdir():
        secret.chmod(0o644)  # the image's user (10001) reads them, as a secret mount's files are
    config = tmp_path / "gatehouse.json"
    config.write_text(json.dumps({
        "public_url": f"http://127.0.0.1:{port}",
        "oidc": {"issuer": mock_idp, "client_id": CLIENT_ID},
        "registration": {"code_sender": {"kind": "http", "url": f"http://127.0.0.1:{free_port()}/codes"}},
        "apps": [{"slug": "hr", "name": "HR", "upstream": f"http://127.0.0.1:{app.server_address[1]}/"}],
        "allowlist": ["127.0.0.1"], "proxy": {"allow_http_loopback": True},
        "metrics": {"enabled": False}, "log_format": "json",
    }))
    config.chmod(0o644)
    name = f"gatehouse-e2e-{uuid.uuid4().hex[:8]}"
    podman(
        "run", "--detach", "--name", name, "--network", "host",
        "--volume", f"{config}:/etc/gatehouse/gatehouse.json:ro", "--volume", f"{secrets}:/run/secrets:ro",
        "--env", f"GATEHOUSE_LISTEN_PORT={port}", "--env", "GATEHOUSE_OIDC_CLIENT_SECRET_FILE=/run/secrets/client-secret",
        "--env", "GATEHOUSE_STORAGE_ENCRYPTION_KEY_FILE=/run/secrets/storage.key", image)
    try:
        for _ in range(300):
            running = podman("inspect", "--format", "{{.State.Running}}", name, check=False).stdout.strip() == "true"
            if not running or answers(f"http://127.0.0.1:{port}/healthz"):
                break
            time.sleep(0.2)
        if not answers(f"http://127.0.0.1:{port}/healthz"):
            logs = podman("logs", name, check=False)
            raise RuntimeError(f"the container did not answer; it said:\n{(logs.stdout + logs.stderr)[-3000:]}")
        http = requests.Session()
        gateway = f"http://127.0.0.1:{port}"
        first = http.get(gateway + "/apps/hr/home", allow_redirects=False, timeout=10)
        callback, _ = through_provider(http, gateway + first.headers["Location"].replace("/signin", "/signin/start", 1), KIM)
        assert callback.headers["Location"] == "/apps/hr/home"
        assert http.get(gateway + "/apps/hr/home", timeout=10).json() == {"path": "/home"}

        # Its own HEALTHCHECK (`gatehouse probe` on /healthz), as podman and Kubernetes' probes ask it.
        assert podman("healthcheck", "run", name, check=False).returncode == 0
        inspected = json.loads(podman("image", "inspect", image).stdout)[0]
        assert inspected["Config"]["User"] == "10001:10001"
        assert inspected["Healthcheck"]["Test"] == ["CMD", "/usr/bin/gatehouse", "probe"]
        user = podman("top", name, "user", "huser").stdout.split()
        assert user[-2:] == ["gatehouse", "10001"], user
    finally:
        stopped = podman("stop", "--time", "15", name, check=False)
        exit_code = podman("inspect", "--format", "{{.State.ExitCode}}", name, check=False).stdout.strip()
        podman("rm", "-f", name, check=False)
        app.shutdown()
    # SIGTERM: the gateway's graceful shutdown, exit 0.
    assert stopped.returncode == 0 and exit_code == "0", (stopped.stderr, exit_code)
