"""The member's journey in a real browser (Debian's chromium through chromedriver)."""

import json
from urllib.parse import quote

from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from conftest import KIM


def wait(browser, condition, timeout=20):
    """Until `condition` holds; one read while the page navigates (an element of the page that is going) is asked
    again, as one not there yet is."""
    def settled(b):
        try:
            return condition(b)
        except WebDriverException as error:
            # Chromium's word for an element found on the page that is going and read on the one that came.
            if "does not belong to the document" in (error.msg or ""):
                return False
            raise
    return WebDriverWait(browser, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(settled)


def clicked(selector):
    """A condition for `wait`: the element found and clicked, found again when a live page replaced it just then (a
    click on a replaced element never happened, so nothing is clicked twice)."""
    def click(browser):
        browser.find_element(By.CSS_SELECTOR, selector).click()
        return True
    return click


def sign_out(browser):
    """Signs out as a member does: the account menu in the header, then its sign-out button."""
    browser.find_element(By.ID, "member-menu-button").click()
    wait(browser, lambda b: b.find_element(By.ID, "sign-out").is_displayed())
    browser.find_element(By.ID, "sign-out").click()


def bar(browser):
    """The gateway bar's shadow root on a proxied page (its markup is out of reach of the page's selectors)."""
    return wait(browser, lambda b: b.find_element(By.ID, "gatehouse-bar").shadow_root)


def in_bar(browser, selector):
    return bar(browser).find_element(By.CSS_SELECTOR, selector)


def bar_has(browser, selector):
    return bool(bar(browser).find_elements(By.CSS_SELECTOR, selector))


def path_of(browser):
    from urllib.parse import urlparse

    parsed = urlparse(browser.current_url)
    return parsed.path + (("?" + parsed.query) if parsed.query else "")


def test_journey_against_a_separate_oidc_provider(browser, gateway, mock_idp):
    # A deep link opened while signed out…
    browser.get(gateway.url + "/stories")
    wait(browser, EC.url_contains("/signin"))
    assert browser.find_element(By.TAG_NAME, "h1").text == "Sign In"
    assert "Use your organization credentials to access web apps" in browser.page_source
    browser.find_element(By.ID, "sign-in").click()

    # …goes through the provider's own page…
    wait(browser, EC.url_contains(mock_idp + "/oauth2/authorize"))
    browser.find_element(By.CSS_SELECTOR, f'button[name="sub"][value="{KIM["sub"]}"]').click()

    # …and lands on the deep link, signed in.
    wait(browser, lambda b: path_of(b) == "/stories")
    assert browser.find_element(By.ID, "member-name").text == "Kim Keycloak"
    assert browser.find_element(By.CSS_SELECTOR, 'nav a[aria-current="page"]').text == "Stories"

    browser.find_element(By.CSS_SELECTOR, 'nav a[href="/"]').click()
    wait(browser, lambda b: path_of(b) == "/")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Web Apps"

    # Sign out: the gateway session ends, then the provider's end_session endpoint is visited.
    sign_out(browser)
    wait(browser, EC.url_contains(mock_idp + "/oauth2/end_session"))
    browser.get(gateway.url + "/")
    wait(browser, EC.url_contains("/signin"))

    # `serve` logs one JSON object per line; every request has its line with id, route class, status and duration.
    lines = [json.loads(line) for line in gateway.log().splitlines() if line.strip()]
    requests_logged = [line for line in lines if line["message"] == "request"]
    assert {"/stories", "/signin", "/auth/callback", "/"} <= {line["path"] for line in requests_logged}
    for line in requests_logged:
        assert line["hb.request.id"] and line["route"] and line["status"] and float(line["duration_ms"]) >= 0
    assert any(line["path"] == "/auth/callback" and line["route"] == "sign_in" and line["status"] == "303" for line in requests_logged)
    samples = gateway.metrics()
    assert samples["gatehouse_sign_in_successes_total"] == 1
    assert samples["gatehouse_sign_outs_total"] == 1


def open_development_sign_in(browser, gateway, deep_link):
    """A signed-out deep link, the sign-in page, and on to the development provider's page."""
    browser.get(gateway.url + deep_link)
    expected = "/signin" if deep_link == "/" else "/signin?return_to=" + quote(deep_link, safe="")
    wait(browser, EC.url_contains(expected))
    browser.find_element(By.ID, "sign-in").click()
    wait(browser, EC.url_contains("/dev-idp/authorize"))


def test_journey_in_development_mode(browser, dev_gateway):
    open_development_sign_in(browser, dev_gateway, "/calls")
    assert "Development identity provider" in browser.find_element(By.CSS_SELECTOR, ".dev-label").text
    # A wrong password keeps the member on the provider's page with an inline message and the choice kept.
    browser.find_element(By.ID, "account-bob").click()
    browser.find_element(By.ID, "password").send_keys("not-the-password")
    browser.find_element(By.ID, "dev-continue").click()
    wait(browser, EC.presence_of_element_located((By.ID, "dev-error")))
    assert browser.find_element(By.ID, "account-bob").is_selected()

    browser.find_element(By.ID, "account-alice").click()
    browser.find_element(By.ID, "password").send_keys(dev_gateway.dev_password)
    browser.find_element(By.ID, "dev-continue").click()

    wait(browser, lambda b: path_of(b) == "/calls")
    assert browser.find_element(By.ID, "member-name").text == "Alice Archer"

    sign_out(browser)
    # The built-in provider's end_session sends the browser back to the gateway's signed-out page.
    wait(browser, lambda b: path_of(b) == "/signed-out")
    assert "You have been signed out." in browser.page_source
    assert browser.find_element(By.ID, "sign-in").is_displayed()
    browser.get(dev_gateway.url + "/")
    wait(browser, EC.url_contains("/signin"))


def test_cancel_at_the_development_provider(browser, dev_gateway):
    open_development_sign_in(browser, dev_gateway, "/chats")
    browser.find_element(By.ID, "dev-cancel").click()
    wait(browser, EC.presence_of_element_located((By.ID, "signin-error")))
    assert "Sign-in was cancelled" in browser.find_element(By.ID, "signin-error").text
    # The deep link is still remembered for the next try.
    assert browser.find_element(By.CSS_SELECTOR, 'input[name="return_to"]').get_attribute("value") == "/chats"
