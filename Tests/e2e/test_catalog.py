"""The console's app catalog on two replicas of one PostgreSQL behind nginx, in a real browser: an operator adds an
app (a real server: the OIDC provider's own process), and both replicas serve it within a second of the save; disabled
and removed the same way; every change in the audit trail with the operator and the entry before and after."""

import time

import pytest
import requests
from selenium.webdriver.common.by import By

from conftest import BINARY
from test_browser_journey import wait
from test_replicas import ADA, session_cookie, sign_in_in_browser
from replicas import ReplicaSet

SLUG = "provider"
PATH = f"/apps/{SLUG}/.well-known/openid-configuration"


@pytest.fixture
def replicas():
    # Ada's realm role makes her an operator.
    running = ReplicaSet(BINARY, extra={"operator": {"role": "user"}})
    running.start()
    try:
        yield running
    finally:
        running.stop()


def served_by_every_replica_within(replicas, cookie, status, since, bound=1.0):
    """Whether every replica answers `PATH` with `status` within `bound` seconds of `since` (each replica asked
    directly, not through the balancer)."""
    reached = set()
    while time.monotonic() - since < bound and len(reached) < replicas.count:
        for index in range(replicas.count):
            answer = requests.get(
                replicas.replica_url(index) + PATH, cookies={"gatehouse_session": cookie}, allow_redirects=False, timeout=5
            )
            if answer.status_code == status:
                reached.add(index)
    return reached == set(range(replicas.count))


def test_an_app_added_in_the_console_is_served_by_every_replica_within_a_second(browser, replicas):
    sign_in_in_browser(browser, replicas, "/operator/catalog")
    cookie = session_cookie(browser)
    assert served_by_every_replica_within(replicas, cookie, 404, time.monotonic())

    browser.find_element(By.ID, "app-add").click()
    wait(browser, lambda b: "/operator/catalog/new" in b.current_url)
    # The slug's pattern is one the browser itself checks (a valid expression under its `v` flag).
    slug = browser.find_element(By.ID, "app-slug")
    slug.send_keys("Not A Slug!")
    assert browser.execute_script("return arguments[0].validity.patternMismatch", slug)
    slug.clear()
    slug.send_keys("a-good-slug-9")
    assert not browser.execute_script("return arguments[0].validity.patternMismatch", slug)
    slug.clear()
    browser.find_element(By.ID, "app-slug").send_keys(SLUG)
    browser.find_element(By.ID, "app-name").send_keys("Identity Provider")
    browser.find_element(By.ID, "app-description").send_keys("The realm's discovery document")
    browser.find_element(By.ID, "app-upstream").send_keys(replicas.issuer + "/")
    browser.find_element(By.ID, "app-preview").click()
    wait(browser, lambda b: b.find_elements(By.ID, "app-tile-preview"))
    assert "Identity Provider" in browser.find_element(By.ID, "app-tile-preview").text
    browser.find_element(By.ID, "app-save").click()
    saved = time.monotonic()
    wait(browser, lambda b: "done=added" in b.current_url)
    assert served_by_every_replica_within(replicas, cookie, 200, saved)
    discovery = requests.get(replicas.url + PATH, cookies={"gatehouse_session": cookie}, timeout=5).json()
    assert discovery["issuer"] == replicas.issuer

    # The tile is on the portal, whichever replica answers.
    for _ in range(2):
        browser.get(replicas.url + "/")
        assert browser.find_elements(By.CSS_SELECTOR, f'#apps [data-app="{SLUG}"]')

    # Disabled from the list: gone from both within a second.
    browser.get(replicas.url + "/operator/catalog")
    browser.find_element(By.ID, f"app-disable-{SLUG}").click()
    disabled = time.monotonic()
    wait(browser, lambda b: "done=disabled" in b.current_url)
    assert served_by_every_replica_within(replicas, cookie, 404, disabled)
    # A member who opens it is told it is turned off, naming it, not "Page not found".
    browser.get(replicas.url + f"/apps/{SLUG}/")
    assert "This app is turned off" in browser.find_element(By.TAG_NAME, "h1").text
    told = browser.find_element(By.TAG_NAME, "main").text
    assert "\u2068Identity Provider\u2069 has been turned off" in told, told
    browser.get(replicas.url + "/operator/catalog")
    # Remove asks first.
    browser.find_element(By.ID, f"app-remove-{SLUG}").click()
    wait(browser, lambda b: b.find_elements(By.ID, "app-remove-confirm"))
    browser.find_element(By.ID, "app-remove-confirm").click()
    wait(browser, lambda b: "done=removed" in b.current_url)
    assert browser.find_elements(By.ID, "no-console-apps")

    # The audit trail, as JSON: added, disabled, removed, by Ada, with the entry before and after.
    records = requests.get(
        replicas.url + "/operator/audit",
        params={"app": SLUG, "action": "operator_change"},
        headers={"Accept": "application/json"},
        cookies={"gatehouse_session": cookie},
        timeout=5,
    ).json()
    assert [r["reason"] for r in records] == ["app_removed", "app_disabled", "app_added"]
    assert all(r["member"] == ADA["sub"] for r in records)
    assert records[-1]["detail"].startswith("before: none; after: enabled {")
    assert '"upstream":"' + replicas.issuer + '/"' in records[-1]["detail"]
