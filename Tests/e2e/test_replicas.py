"""Two Gatehouse replicas on one PostgreSQL behind nginx (round robin, no sticky sessions), with a separate OIDC
provider process: a member signs in through the balancer in a real browser and uses the jar demo app whichever
replica answers; a sign-out is refused by the other replica within a second; a token refresh under load on both
replicas reaches the provider once; both replicas publish and sign with one assertion key; a replica killed with SIGKILL leaves the other serving every session; a client
address's sign-in limit is one limit across the replicas."""

import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import jwt
import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC

from conftest import BINARY, ROOT
from test_browser_journey import path_of, sign_out, wait

sys.path.insert(0, str(ROOT / "scripts"))
from replicas import MEMBERS, ReplicaSet  # noqa: E402

ADA = MEMBERS[0]
# Tokens live 30 s and are refreshed in their last 27: a few seconds after sign-in every request wants a refresh.
TOKEN_MAX_AGE = 30
REFRESH_WINDOW = 27


@pytest.fixture
def replicas():
    running = ReplicaSet(BINARY, token_max_age=TOKEN_MAX_AGE, extra={"session": {"refresh_window_seconds": REFRESH_WINDOW}})
    running.start()
    try:
        yield running
    finally:
        running.stop()


def sign_in_in_browser(browser, replicas, deep_link):
    browser.get(replicas.url + deep_link)
    wait(browser, EC.url_contains("/signin"))
    browser.find_element(By.ID, "sign-in").click()
    # The provider's own page: the member picks who they are.
    wait(browser, EC.url_contains(replicas.issuer + "/oauth2/authorize"))
    browser.find_element(By.CSS_SELECTOR, f'button[name="sub"][value="{ADA["sub"]}"]').click()
    wait(browser, lambda b: b.current_url.startswith(replicas.url) and path_of(b) == deep_link)


def sign_in_over_http(replicas):
    """Ada signed in through the balancer without a browser; her session cookie."""
    http = requests.Session()
    start = http.get(replicas.url + "/signin/start", allow_redirects=False)
    decision = http.post(start.headers["Location"], data={"sub": ADA["sub"]}, allow_redirects=False)
    assert http.get(decision.headers["Location"], allow_redirects=False).status_code == 303
    return http.cookies["gatehouse_session"]


def session_cookie(browser):
    return {c["name"]: c["value"] for c in browser.get_cookies()}["gatehouse_session"]


def status_on(url, cookie, path="/"):
    return requests.get(url + path, cookies={"gatehouse_session": cookie}, allow_redirects=False, timeout=10).status_code


def refused_by_every_replica(replicas, cookie, since):
    """Whether every replica refuses `cookie` (sends it to sign in) within a second of `since`."""
    refused = set()
    while time.monotonic() - since < 1.0 and len(refused) < replicas.count:
        for index in range(replicas.count):
            if status_on(replicas.replica_url(index), cookie) == 303:
                refused.add(index)
    return refused == set(range(replicas.count))


def token_requests(replicas):
    return len(re.findall(r'"POST /oauth2/token', replicas.provider.output()))


def test_a_member_moves_between_replicas_freely_and_a_sign_out_reaches_both(browser, replicas):
    sign_in_in_browser(browser, replicas, "/apps/visits/")
    cookie = session_cookie(browser)
    # Each replica serves the session by itself.
    for index in range(replicas.count):
        assert status_on(replicas.replica_url(index), cookie) == 200

    # The visit counter's cookie lives in the shared jar: every page view through the balancer counts, whichever
    # replica answers it.
    browser.find_element(By.ID, "name").send_keys("Ada on two replicas")
    browser.find_element(By.ID, "app-sign-in").click()
    wait(browser, EC.presence_of_element_located((By.ID, "visits")))
    for expected in range(2, 7):
        browser.refresh()
        wait(browser, lambda b: int(b.find_element(By.ID, "visits").text) == expected)
    assert browser.find_element(By.ID, "app-user").text == "Ada on two replicas"

    # Sign out through the balancer; both replicas refuse the old cookie within a second.
    browser.get(replicas.url + "/")
    signed_out_at = time.monotonic()
    sign_out(browser)
    assert refused_by_every_replica(replicas, cookie, since=signed_out_at)


def test_a_session_ended_from_another_browser_is_refused_by_every_replica_within_a_second(replicas):
    laptop, phone = sign_in_over_http(replicas), sign_in_over_http(replicas)
    for index in range(replicas.count):
        assert status_on(replicas.replica_url(index), phone) == 200  # each replica has it cached now
    cookies = {"gatehouse_session": laptop}
    page = requests.get(replicas.replica_url(0) + "/account/sessions", cookies=cookies, timeout=10).text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    other = re.search(r'data-handle="([0-9a-f]+)">', page).group(1)
    ended_at = time.monotonic()
    requests.post(replicas.replica_url(0) + "/account/sessions/end", data={"csrf": csrf, "session": other}, cookies=cookies, timeout=10)
    assert refused_by_every_replica(replicas, phone, since=ended_at)
    assert status_on(replicas.replica_url(1), laptop) == 200


def test_a_refresh_under_load_on_both_replicas_reaches_the_provider_once(replicas):
    cookie = sign_in_over_http(replicas)
    before = token_requests(replicas)  # the code exchange
    time.sleep(TOKEN_MAX_AGE - REFRESH_WINDOW + 1)  # now inside the refresh window

    def load(index):
        return status_on(replicas.replica_url(index % replicas.count), cookie)

    with ThreadPoolExecutor(max_workers=16) as pool:
        statuses = list(pool.map(load, range(64)))
    assert statuses == [200] * 64
    assert token_requests(replicas) == before + 1


def test_every_replica_publishes_and_signs_with_the_same_keys(replicas):
    cookie = sign_in_over_http(replicas)
    sets = [requests.get(replicas.replica_url(index) + "/.well-known/jwks.json", timeout=10).json() for index in range(replicas.count)]
    assert sets[0] == sets[1] and len(sets[0]["keys"]) == 1
    kid = sets[0]["keys"][0]["kid"]
    for index in range(replicas.count):
        page = requests.get(replicas.replica_url(index) + "/apps/whoami/", cookies={"gatehouse_session": cookie}, timeout=10)
        token = re.search(r'<th scope="row">X-Gatehouse-Assertion</th><td><code>([^<]+)</code>', page.text, re.I).group(1)
        assert jwt.get_unverified_header(token)["kid"] == kid and "Verified: signed with a key" in page.text, page.text


def test_a_replica_killed_with_sigkill_leaves_the_others_serving(replicas):
    sessions = [sign_in_over_http(replicas) for _ in range(3)]
    replicas.replicas[0].kill()
    survivor = replicas.replica_url(1)
    for cookie in sessions:
        assert status_on(survivor, cookie) == 200
        # The balancer passes over the dead replica.
        assert status_on(replicas.url, cookie) == 200


def test_a_client_address_has_one_sign_in_limit_across_the_replicas():
    running = ReplicaSet(BINARY, extra={"rate_limits": {"sign_in_starts": {"limit": 3, "period_seconds": 600}}})
    running.start()
    try:
        def start(client):
            # The client's own X-Forwarded-For, to which nginx appends the address it saw (loopback, trusted too).
            return requests.get(
                running.url + "/signin/start", headers={"X-Forwarded-For": client}, allow_redirects=False, timeout=10)

        # Round robin: the five requests alternate between the replicas, the limit is counted once for both.
        replies = [start("203.0.113.5") for _ in range(5)]
        assert [r.status_code for r in replies] == [303, 303, 303, 429, 429]
        assert all(0 < int(r.headers["Retry-After"]) <= 200 for r in replies[3:])
        assert "Too many attempts" in replies[3].text
        # Another client behind the same balancer is not locked out.
        assert start("203.0.113.6").status_code == 303
    finally:
        running.stop()
