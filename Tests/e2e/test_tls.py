"""HTTPS on the members' listener, as `gatehouse dev --tls` serves it: a development authority made under ./data,
curl over HTTP/1.1 trusting it (and refused without it), and the whole journey in Chromium over HTTPS (sign-in, a
proxied app with its bar, the upgrade flow to the end), the browser trusting exactly the listener's key."""

import base64
import hashlib
import os
import re
import subprocess
import time

import pytest
from selenium.webdriver.common.by import By

from conftest import BINARY, Running, free_port, start_browser
from test_browser_journey import in_bar, path_of, wait
from test_upgrade_journey import latest_code, replaced, sign_in, submit


class TLSGateway:
    def __init__(self, folder):
        self.port = free_port()
        self.url = f"https://localhost:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("GATEHOUSE_")}
        env.update(
            GATEHOUSE_PUBLIC_URL=self.url,
            GATEHOUSE_DEVELOPMENT_DEMO_APPS_PORT=str(free_port()),
            GATEHOUSE_METRICS_PORT=str(free_port()),
            GATEHOUSE_LOG_LEVEL="info",
        )
        self.running = Running([str(BINARY), "dev", "--tls"], folder / "gatehouse.log", env=env, cwd=folder)
        self.authority = folder / "data" / "tls" / "development-ca.pem"
        self.certificate = folder / "data" / "tls" / "localhost.pem"
        deadline = time.monotonic() + 60
        while self.curl("/healthz").stdout != "ok\n":
            assert self.running.process.poll() is None and time.monotonic() < deadline, self.running.output()
            time.sleep(0.2)

    def curl(self, path, *arguments):
        return subprocess.run(
            ["curl", "-sS", "--max-time", "10", "--cacert", str(self.authority), *arguments, self.url + path],
            capture_output=True, text=True)

    @property
    def dev_password(self):
        return re.search(r"password for all of them this run: (\S+)\)", self.running.output()).group(1)

    def leaf_spki_hash(self):
        """base64 SHA-256 of the leaf certificate's public key: what Chromium's --ignore-certificate-errors-spki-list takes."""
        leaf = self.certificate.read_text().split("-----END CERTIFICATE-----")[0] + "-----END CERTIFICATE-----\n"
        key = subprocess.run(["openssl", "x509", "-pubkey", "-noout"], input=leaf, capture_output=True, text=True, check=True).stdout
        der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=key.encode(), capture_output=True, check=True).stdout
        return base64.b64encode(hashlib.sha256(der).digest()).decode()


@pytest.fixture
def tls_gateway(tmp_path):
    gateway = TLSGateway(tmp_path)
    yield gateway
    gateway.running.stop()


def test_curl_over_https_trusts_the_development_authority_only(tls_gateway):
    gw = tls_gateway
    answer = gw.curl("/signin", "--http1.1", "-D", "-", "-o", "/dev/null")
    assert answer.returncode == 0, answer.stderr
    assert re.search(r"^HTTP/1.1 200", answer.stdout, re.M) and "strict-transport-security: max-age=31536000" in answer.stdout.lower()
    # Without the authority curl refuses the certificate; plain HTTP on the TLS port gets no answer.
    untrusted = subprocess.run(["curl", "-sS", "--max-time", "10", gw.url + "/healthz"], capture_output=True, text=True)
    assert untrusted.returncode == 60, untrusted  # SSL certificate problem
    plain = subprocess.run(["curl", "-sS", "--max-time", "10", f"http://localhost:{gw.port}/healthz"], capture_output=True, text=True)
    assert plain.returncode != 0 or "ok" not in plain.stdout
    # TLS 1.1 is refused; 1.2 and 1.3 are served.
    assert gw.curl("/healthz", "--tlsv1.1", "--tls-max", "1.1").returncode != 0
    assert gw.curl("/healthz", "--tlsv1.2", "--tls-max", "1.2").stdout == "ok\n"
    assert gw.curl("/healthz", "--tlsv1.3").stdout == "ok\n"


def test_the_journey_over_https_in_a_browser(tls_gateway):
    gw = tls_gateway
    browser = start_browser(extra_arguments=[f"--ignore-certificate-errors-spki-list={gw.leaf_spki_hash()}"])
    try:
        sign_in(browser, gw, "alice")
        assert browser.current_url.startswith(gw.url)
        browser.get(gw.url + "/apps/links/")
        wait(browser, lambda b: in_bar(b, "#gatehouse-banner-button").is_displayed())
        in_bar(browser, "#gatehouse-banner-button").click()
        wait(browser, lambda b: path_of(b) == "/upgrade/phone")
        submit(browser, "phone", "+1 555 010 0001", "send-code")
        wait(browser, lambda b: path_of(b) == "/upgrade/code")
        code = latest_code(browser, gw)
        browser.back()
        wait(browser, lambda b: path_of(b) == "/upgrade/code")
        submit(browser, "code", code, "verify-code")
        wait(browser, lambda b: path_of(b) == "/upgrade/username")
        submit(browser, "username", "alice.tls", "choose-username")
        wait(browser, lambda b: path_of(b) == "/upgrade/pin")
        browser.find_element(By.ID, "pin").send_keys("2580")
        submit(browser, "pin-confirmation", "2580", "set-pin")
        wait(browser, lambda b: path_of(b) == "/upgrade/profile")
        browser.find_element(By.CSS_SELECTOR, "input[name=discoverability]").click()
        page = browser.find_element(By.TAG_NAME, "html")
        browser.find_element(By.ID, "finish").click()
        wait(browser, replaced(page))
        wait(browser, lambda b: path_of(b).startswith("/upgrade/done"))
        # Back in the app where the upgrade started, now registered: no banner; the session cookie is Secure.
        browser.find_element(By.ID, "continue").click()
        wait(browser, lambda b: path_of(b).startswith("/apps/links/"))
        assert not browser.execute_script("return !!document.getElementById('gatehouse-bar').shadowRoot.getElementById('gatehouse-banner')")
        session = [c for c in browser.get_cookies() if c["name"] == "gatehouse_session"][0]
        assert session["secure"] and session["httpOnly"]
    finally:
        browser.quit()
