"""Fixtures for the end-to-end tests: real processes on loopback, started and stopped here.

- an OIDC provider process (`oidc-provider-mock` from PyPI) with Keycloak-shaped members,
- the Gatehouse binary, against that provider or in development mode with its built-in provider,
- headless Chromium driven by Selenium through Debian's chromedriver.
"""

import base64
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("GATEHOUSE_BIN", ROOT / ".build" / "debug" / "gatehouse"))
CLIENT_ID = "gatehouse-e2e"

# A child process with its log file, and free ports (the replicas' helpers, shared).
sys.path.insert(0, str(ROOT / "scripts"))
from replicas import Process as Running, free_port  # noqa: E402

# Keycloak's userinfo shape: realm roles, this client's roles, groups, phone_number.
KIM = {
    "sub": "kc-kim-0001",
    "name": "Kim Keycloak",
    "email": "kim@example.org",
    "phone_number": "+15550109999",
    "preferred_username": "kim",
    "realm_access": {"roles": ["user", "offline_access"]},
    "resource_access": {CLIENT_ID: {"roles": ["app-user"]}, "other-client": {"roles": ["admin"]}},
    "groups": ["/staff"],
}
LEE = {
    "sub": "kc-lee-0002",
    "name": "Lee Nophone",
    "email": "lee@example.org",
    "realm_access": {"roles": ["user"]},
    "groups": [],
}


def wait_for(url, timeout=60.0, process=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before {url} answered")
        try:
            if requests.get(url, timeout=2).status_code < 500:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout} s")


@pytest.fixture(scope="session")
def mock_idp(tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("mock-idp") / "mock.log"
    args = [sys.executable, "-m", "oidc_provider_mock", "--port", str(port), "--require-nonce", "true"]
    for user in (KIM, LEE):
        args += ["--user-claims", json.dumps(user)]
    running = Running(args, log)
    issuer = f"http://127.0.0.1:{port}"
    try:
        wait_for(issuer + "/.well-known/openid-configuration", process=running.process)
        yield issuer
    finally:
        running.stop()


def write_config(path, port, issuer=None, development=False, extra=None):
    data_dir = path.parent / "data"
    config = {
        "public_url": f"http://127.0.0.1:{port}",
        "storage": {"sqlite_path": str(data_dir / "gatehouse.sqlite")},
        "directories": {
            "templates": str(ROOT / "Templates"),
            "public": str(ROOT / "Public"),
            "strings": str(ROOT / "Strings"),
            "data": str(data_dir),
        },
        "log_level": "info",
        "metrics": {"port": free_port()},
    }
    if development:
        config["development"] = {"demo_apps_port": free_port()}
    else:
        config["oidc"] = {"issuer": issuer, "client_id": CLIENT_ID}
        # No journey here sends a code; the sender is named because production mode requires one.
        config["registration"] = {"code_sender": {"kind": "http", "url": f"http://127.0.0.1:{free_port()}/codes"}}
        # Stopped at once between tests; the drain has its own test (test_shutdown.py).
        config["listen"] = {"drain_seconds": 0}
    config.update(extra or {})
    path.write_text(json.dumps(config, indent=2))
    return path


class Gateway:
    def __init__(self, running, port, command=None, env=None, log_dir=None, metrics_port=None):
        self.running = running
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics" if metrics_port else None
        self.command = command
        self.env = env
        self.log_dir = log_dir
        self.restarts = 0

    def restart(self):
        """Stops the process and starts it again with the same configuration and data."""
        self.running.stop()
        self.restarts += 1
        self.running = Running(self.command, self.log_dir / f"gatehouse-{self.restarts}.log", env=self.env)
        wait_for(self.url + "/healthz", process=self.running.process)

    def member_session(self, account):
        """A `requests` session signed in as a demo member through the development provider's form."""
        session = requests.Session()
        response = self.sign_in_by_form(session, account)
        assert response.url.rstrip("/") == self.url, response.url
        return session

    def sign_in_by_form(self, session, account, return_to=None):
        """Signs `session` in as a demo member through the development provider's form; the answer where the gateway
        sent the member afterwards (`return_to`, or Web Apps)."""
        params = {"return_to": return_to} if return_to else None
        response = session.get(self.url + "/signin/start", params=params, allow_redirects=True, timeout=10)
        fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', response.text))
        fields.update({"account": account, "password": self.dev_password, "action": "continue"})
        action = re.search(r'<form method="post" action="([^"]+)"', response.text).group(1)
        return session.post(self.url + action, data=fields, allow_redirects=True, timeout=10)

    def metrics(self):
        """The operators' metrics, `name{labels}` → value."""
        text = requests.get(self.metrics_url, timeout=10).text
        samples = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                samples[key] = float(value)
        return samples

    def log(self):
        """Everything the gateway wrote, except the development banner's line that shows the demo password on purpose."""
        return "\n".join(line for line in self.running.output().splitlines() if "password for all of them this run:" not in line)

    def opened_rows(self, table, key):
        """Every row's body of `table` in the SQLite store, opened with development mode's key as the gateway opens
        it: AES-256-GCM, `gh1:<key id>:<base64 of nonce, ciphertext and tag>`, the row's identity as associated data."""
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        data = self.log_dir / "data"
        aead = AESGCM(base64.b64decode((data / "storage.key").read_text().split()[0]))
        database = sqlite3.connect(data / "gatehouse.sqlite")
        try:
            rows = list(database.execute(f"SELECT {key}, body FROM {table}"))
        finally:
            database.close()
        opened = []
        for identity, body in rows:
            sealed = json.loads(body)["sealed"] if table == "sessions" else body
            prefix, _, combined = sealed.split(":", 2)
            assert prefix == "gh1", f"{table} holds a value that is not sealed"
            raw = base64.b64decode(combined)
            opened.append(json.loads(aead.decrypt(raw[:12], raw[12:], f"{table}.body:{identity}".encode())))
        return opened

    def stored_secrets(self):
        """The tokens and CSRF tokens of every session, and the value of every cookie in the members' jars, as the
        store keeps them sealed."""
        found = []

        def collect(value, key=""):
            if isinstance(value, dict):
                for name, inner in value.items():
                    collect(inner, name)
            elif isinstance(value, str) and ("token" in key.lower() or "csrf" in key.lower()) and len(value) >= 8:
                found.append(value)

        for body in self.opened_rows("sessions", "id"):
            collect(body)
        for jar in self.opened_rows("cookie_jars", "session_id"):
            found += [cookie["value"] for cookie in jar.get("cookies", []) if len(cookie["value"]) >= 8]
        return found

    def stored_bytes(self):
        """The SQLite store's files as a copy of them would have them."""
        data = self.log_dir / "data"
        return b"".join(path.read_bytes() for path in (data / "gatehouse.sqlite", data / "gatehouse.sqlite-wal") if path.exists())

    def assert_log_holds_none_of(self, secrets):
        """No secret in the log as a value of its own: a short one (a 4-digit PIN) inside a longer run of letters and
        digits (a random request or trace id) is not the secret."""
        log = self.log()
        leaked = [
            name for name, value in secrets.items()
            if value and re.search(rf"(?<![0-9A-Za-z]){re.escape(value)}(?![0-9A-Za-z])", log)
        ]
        assert not leaked, f"secrets in the gateway's log: {leaked}"

    @property
    def dev_password(self):
        match = re.search(r"password for all of them this run: (\S+)\)", self.running.output())
        assert match, "development mode did not print the demo password"
        return match.group(1)


def storage_key(folder):
    """A key for the store's secrets in `folder` (made once, owner-only): `openssl rand -base64 32`'s kind."""
    path = folder / "storage.key"
    if not path.exists():
        path.touch(mode=0o600)
        path.write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    return path


def start_gateway(tmp_path, mode, issuer=None, extra=None, attempts=3, environment=None):
    """Starts Gatehouse on free ports. A port found free can be taken by another process before Gatehouse binds it;
    then Gatehouse exits saying so, and it is started again on other ports."""
    port = free_port()
    config = write_config(tmp_path / "gatehouse.json", port, issuer=issuer, development=(mode == "dev"), extra=extra)
    command = [str(BINARY), "dev" if mode == "dev" else "serve", "--config", str(config)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEHOUSE_")}
    if mode != "dev":
        # The provider wants a confidential client; the secret arrives as a file, as in production.
        secret = tmp_path / "client-secret"
        secret.write_text("e2e-client-secret\n")
        env["GATEHOUSE_OIDC_CLIENT_SECRET_FILE"] = str(secret)
        # The store's key, as an operator makes it (development mode makes its own).
        env["GATEHOUSE_STORAGE_ENCRYPTION_KEY_FILE"] = str(storage_key(tmp_path))
    env.update(environment or {})
    running = Running(command, tmp_path / "gatehouse.log", env=env)
    try:
        wait_for(f"http://127.0.0.1:{port}/healthz", process=running.process)
    except RuntimeError as error:
        if attempts > 1 and "Address already in use" in running.output():
            (tmp_path / "gatehouse.log").rename(tmp_path / f"gatehouse-port-taken-{attempts}.log")
            return start_gateway(tmp_path, mode, issuer=issuer, extra=extra, attempts=attempts - 1, environment=environment)
        running.stop()
        raise RuntimeError(f"{error}; the gateway said:\n{running.output()[-3000:]}") from error
    metrics_port = json.loads(config.read_text())["metrics"]["port"]
    return Gateway(running, port, command=command, env=env, log_dir=tmp_path, metrics_port=metrics_port)


@pytest.fixture
def gateway(tmp_path, mock_idp):
    """Gatehouse in production mode against the separately running OIDC provider."""
    gw = start_gateway(tmp_path, "serve", issuer=mock_idp)
    yield gw
    gw.running.stop()


@pytest.fixture
def dev_gateway(tmp_path):
    """Gatehouse in development mode with its built-in provider."""
    gw = start_gateway(tmp_path, "dev")
    yield gw
    gw.running.stop()


def start_browser(extra_arguments=(), capabilities=None):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM_BIN", "/usr/bin/chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,900", *extra_arguments):
        options.add_argument(argument)
    for name, value in (capabilities or {}).items():
        options.set_capability(name, value)
    driver = webdriver.Chrome(service=Service(os.environ.get("CHROMEDRIVER_BIN", "/usr/bin/chromedriver")), options=options)
    driver.set_page_load_timeout(30)
    return driver


@pytest.fixture
def browser():
    driver = start_browser()
    yield driver
    driver.quit()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed browser test leaves a screenshot of what the browser showed, beside the test's files."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    for name in ("member", "browser"):
        driver = item.funcargs.get(name) if hasattr(item, "funcargs") else None
        if driver is not None and hasattr(driver, "save_screenshot"):
            folder = Path(os.environ.get("E2E_SCREENSHOTS", Path(tempfile.gettempdir()) / "gatehouse-e2e-failures"))
            folder.mkdir(parents=True, exist_ok=True)
            try:
                driver.save_screenshot(str(folder / (re.sub(r"\W+", "_", item.nodeid) + ".png")))
            except Exception:  # the browser may be gone with the failure
                pass
