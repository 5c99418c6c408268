"""Two identity providers in a real browser: the development provider (the first) and a separately running
oidc-provider-mock (a second realm, Keycloak-shaped members), each with its own button on the sign-in page. A member
signs in at each; the session records the provider; the partner's account is `partner:<sub>`, so the apps tell the
two realms' members apart."""

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC

from conftest import CLIENT_ID, KIM, start_gateway
from test_browser_journey import path_of, sign_out, wait


def two_providers(tmp_path, mock_idp):
    secret = tmp_path / "partner-secret"
    secret.write_text("e2e-client-secret\n")
    return start_gateway(
        tmp_path,
        "dev",
        extra={
            "oidc": [
                {"id": "staff", "name": "Staff"},
                {"id": "partner", "name": "Partner Realm", "issuer": mock_idp, "client_id": CLIENT_ID},
            ]
        },
        # Each provider's secret under its own name.
        environment={"GATEHOUSE_OIDC_PARTNER_CLIENT_SECRET_FILE": str(secret)},
    )


def forwarded_user(browser, gw):
    """Who the demo Who Am I app was told the member is (`X-Forwarded-User`), in the browser."""
    browser.get(gw.url + "/apps/whoami/")
    wait(browser, lambda b: b.find_elements(By.ID, "identity-headers"))
    row = browser.find_element(By.XPATH, '//table[@id="identity-headers"]//th[translate(., "XFORWADEUS", "xforwadeus")="x-forwarded-user"]/..')
    return row.find_element(By.TAG_NAME, "code").text


def test_a_member_signs_in_at_either_provider(browser, tmp_path, mock_idp):
    gw = two_providers(tmp_path, mock_idp)
    try:
        # The partner realm's member.
        browser.get(gw.url + "/")
        wait(browser, EC.url_contains("/signin"))
        assert browser.find_element(By.ID, "sign-in-staff").text == "Sign in with Staff"
        browser.find_element(By.ID, "sign-in-partner").click()
        wait(browser, EC.url_contains(mock_idp + "/oauth2/authorize"))
        browser.find_element(By.CSS_SELECTOR, f'button[name="sub"][value="{KIM["sub"]}"]').click()
        wait(browser, lambda b: b.current_url.startswith(gw.url) and path_of(b) == "/")
        assert "Kim Keycloak" in browser.page_source
        # The account is the pair: the partner's subject under the partner's name.
        assert forwarded_user(browser, gw) == "partner:" + KIM["sub"]
        browser.get(gw.url + "/")
        sign_out(browser)
        # Signed out at the gateway, then at the partner's own provider (not the development one).
        wait(browser, EC.url_contains(mock_idp + "/oauth2/end_session"))

        # The development provider's member, on the same browser.
        browser.get(gw.url + "/")
        wait(browser, EC.url_contains("/signin"))
        browser.find_element(By.ID, "sign-in-staff").click()
        wait(browser, EC.url_contains("/dev-idp/authorize"))
        browser.find_element(By.ID, "account-alice").click()
        browser.find_element(By.ID, "password").send_keys(gw.dev_password)
        browser.find_element(By.ID, "dev-continue").click()
        wait(browser, lambda b: path_of(b) == "/")
        assert "Kim Keycloak" not in browser.page_source
        assert not forwarded_user(browser, gw).startswith("partner:")
    finally:
        gw.running.stop()
