"""The upgrade flow in a real browser: from the banner to the unlocked chat features, by mouse and by keyboard only,
with axe-core checking every page Gatehouse renders (WCAG 2.1 AA, zero violations)."""

import os
import time
from pathlib import Path

import pytest
import requests
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC

from test_browser_journey import bar_has, in_bar, open_development_sign_in, path_of, wait
from test_browser_journey import sign_out as open_menu_and_sign_out

AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def strays(browser):
    """What no member should read on a gateway page (its own pages and the bar on app pages): a missing value shown
    as `nil`, an `Optional(…)`, a template tag left over, or a notice box with nothing in it."""
    return browser.execute_script(r"""
        const bar = document.getElementById('gatehouse-bar')?.shadowRoot;
        const own = !location.pathname.startsWith('/apps/');
        const text = (own ? document.body.innerText : '') + '\n' + (bar ? bar.textContent : '');
        const found = [];
        if (/\bnil\b/.test(text)) found.push('the text nil');
        if (text.includes('Optional(')) found.push('Optional(…)');
        if (/\{\{[#^\/&>!{]?\s*[A-Za-z_.]/.test(text)) found.push('a template tag');
        if (own) for (const notice of document.querySelectorAll('.notice'))
            if (notice.checkVisibility() && !notice.textContent.trim()) found.push('an empty notice #' + notice.id);
        return found;""")


class Checker:
    """Runs axe on every page visited on the gateway's host (its own pages, and the demo apps' pages with the bar)
    and keeps screenshots for docs/."""

    def __init__(self, browser, gateway, folder):
        self.browser = browser
        self.gateway = gateway
        self.folder = folder
        self.checked = []

    def page(self, name=None):
        from axe_core_python.selenium import Axe

        url = self.browser.current_url
        if url.startswith(self.gateway.url):
            results = Axe().run(self.browser, options={"runOnly": {"type": "tag", "values": AXE_TAGS}})
            problems = [
                f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']]}" for v in results["violations"]
            ]
            assert not problems, f"axe violations on {url}:\n" + "\n".join(problems)
            assert not strays(self.browser), f"{url} shows {strays(self.browser)}"
            self.checked.append(path_of(self.browser))
        if name:
            self.browser.save_screenshot(str(self.folder / f"{name}.png"))

    def every_width_and_scheme(self, name=None):
        """`page` at 1280 and 390 pixels, light and dark, nothing overflowing sideways; the screenshot (`name`) at
        1280 in light mode. Leaves the window at 1280."""
        for width in (1280, 390):
            self.browser.set_window_size(width, 900)
            for scheme in ("light", "dark"):
                self.browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
                self.page(name if (width, scheme) == (1280, "light") else None)
                overflow = self.browser.execute_script("return document.documentElement.scrollWidth > document.documentElement.clientWidth")
                assert not overflow, f"{self.browser.current_url} overflows at {width} px"
        self.browser.set_window_size(1280, 900)


def screenshots(tmp_path):
    """Where the screenshots in docs/ go: `GATEHOUSE_SCREENSHOTS` when set, else a throwaway folder."""
    folder = Path(os.environ.get("GATEHOUSE_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def checker(browser, dev_gateway, tmp_path):
    return Checker(browser, dev_gateway, screenshots(tmp_path))


def sign_in(browser, gateway, account, deep_link="/", lands_on=None):
    open_development_sign_in(browser, gateway, deep_link)
    browser.find_element(By.ID, f"account-{account}").click()
    browser.find_element(By.ID, "password").send_keys(gateway.dev_password)
    browser.find_element(By.ID, "dev-continue").click()
    wait(browser, lambda b: path_of(b) == (lands_on or deep_link))


def sign_out(browser):
    open_menu_and_sign_out(browser)
    wait(browser, lambda b: path_of(b) == "/signed-out")


def latest_code(browser, gateway, checker=None):
    browser.get(gateway.url + "/dev/inbox")
    if checker:
        checker.page("dev-inbox")
    return browser.find_element(By.CSS_SELECTOR, "#inbox li .code").text


def code_to_profile(browser, gateway, username, pin="2580"):
    """From the code step (the code sent) straight on to the profile step: the development inbox's code, `username`,
    and `pin` twice."""
    code = latest_code(browser, gateway)
    browser.back()
    wait(browser, lambda b: path_of(b) == "/upgrade/code")
    submit(browser, "code", code, "verify-code")
    wait(browser, lambda b: path_of(b) == "/upgrade/username")
    submit(browser, "username", username, "choose-username")
    wait(browser, lambda b: path_of(b) == "/upgrade/pin")
    browser.find_element(By.ID, "pin").send_keys(pin)
    submit(browser, "pin-confirmation", pin, "set-pin")
    wait(browser, lambda b: path_of(b) == "/upgrade/profile")


def submit(browser, field_id, text, button_id):
    """Fills one field and submits, returning once the next page has replaced this one. Filling is tried again when
    the page was still being swapped in under the driver (Chrome's "node does not belong to the document"); the
    click itself is never repeated, so nothing is submitted twice."""
    for attempt in range(3):
        try:
            page = browser.find_element(By.TAG_NAME, "html")
            field = browser.find_element(By.ID, field_id)
            field.clear()
            field.send_keys(text)
            button = browser.find_element(By.ID, button_id)
            break
        except WebDriverException:
            if attempt == 2:
                raise
            time.sleep(0.3)
    button.click()
    wait(browser, replaced(page))


def replaced(page):
    """Like EC.staleness_of, but also reads Chrome's "node does not belong to the document" (a page caught while it
    is being replaced) as replaced, instead of failing on it."""

    def check(_):
        try:
            page.is_enabled()
            return False
        except StaleElementReferenceException:
            return True
        except WebDriverException as error:
            if "does not belong to the document" in str(error):
                return True
            raise

    return check


def error_text(browser):
    return wait(browser, EC.presence_of_element_located((By.ID, "error-summary"))).text


def check_portal(browser, checker):
    """The web apps at level `sso`, at 1280 and at 390 px: a one-line header with the account menu, the Add Features
    card, tiles of one height with monogram icons."""
    for width, suffix in [(1280, ""), (390, "-390")]:
        browser.set_window_size(width, 900)
        header = browser.find_element(By.CSS_SELECTOR, ".topbar")
        assert header.size["height"] <= 64, header.size
        tiles = browser.find_elements(By.CSS_SELECTOR, ".apps .app")
        assert len({tile.size["height"] for tile in tiles}) == 1, [tile.size for tile in tiles]
        monograms = [icon.text for icon in browser.find_elements(By.CSS_SELECTOR, ".apps .monogram")]
        assert "VC" in monograms and "LF" in monograms
        card = browser.find_element(By.ID, "portal-add-features")
        assert card.is_displayed() and card.accessible_name == "Add Features"
        assert not browser.find_element(By.ID, "sign-out").is_displayed()
        checker.page("portal" + suffix)
        browser.find_element(By.ID, "member-menu-button").click()
        wait(browser, lambda b: b.find_element(By.ID, "sign-out").is_displayed())
        assert "user" in browser.find_element(By.ID, "member-roles").text
        assert browser.find_element(By.ID, "member-email").text == "alice@example.org"
        # Each role stays whole on a phone (no name broken across lines).
        assert all(role.size["height"] < 30 for role in browser.find_elements(By.CSS_SELECTOR, "#member-roles .role"))
        checker.page("portal-menu" + suffix)
        # Escape closes it, focus back on its button; so does a click elsewhere.
        browser.find_element(By.ID, "member-menu-button").send_keys(Keys.ESCAPE)
        assert not browser.find_element(By.ID, "sign-out").is_displayed()
        assert browser.switch_to.active_element.get_attribute("id") == "member-menu-button"
        browser.find_element(By.ID, "member-menu-button").click()
        wait(browser, lambda b: b.find_element(By.ID, "sign-out").is_displayed())
        browser.find_element(By.CSS_SELECTOR, ".topbar .brand").click()
        assert not browser.find_element(By.ID, "sign-out").is_displayed()
    browser.set_window_size(1280, 900)


def test_member_with_a_phone_claim_upgrades_from_the_banner(browser, dev_gateway, checker):
    gw = dev_gateway
    # Somebody registered first takes a name that must be refused later, whatever its letter case.
    register_by_http(gw, "olive", "olive.taken")

    sign_in(browser, gw, "alice")
    check_portal(browser, checker)
    browser.find_element(By.CSS_SELECTOR, 'a[data-app="links"]').click()
    banner = in_bar(browser, "#gatehouse-banner")
    assert "Add Signal Features" in banner.text and "Unlock messaging, calls & stories" in banner.text
    checker.page()

    # The chat tabs show the onboarding prompt while the member is at `sso`.
    browser.get(gw.url + "/chats")
    assert browser.find_element(By.ID, "feature-locked").is_displayed()
    checker.page("onboarding-prompt")
    # A direct URL into a chat app shows the same prompt, not an error.
    browser.get(gw.url + "/apps/chat/")
    assert browser.find_element(By.ID, "add-features").is_displayed()
    checker.page()

    browser.get(gw.url + "/apps/links/")
    wait(browser, lambda b: in_bar(b, "#gatehouse-banner-button").is_displayed())
    in_bar(browser, "#gatehouse-banner-button").click()

    # Step 1: the phone number comes from the organization account, with a note saying so.
    wait(browser, lambda b: path_of(b) == "/upgrade/phone")
    # Grouped as the hint, step 2 and the account menu show it.
    assert browser.find_element(By.ID, "phone").get_attribute("value") == "+1 555 010 0001"
    assert browser.find_element(By.ID, "phone-from-sso").is_displayed()
    checker.page("step-1-phone")
    submit(browser, "phone", "5550100001", "send-code")
    assert "country code" in error_text(browser)
    assert browser.find_element(By.ID, "phone").get_attribute("value") == "5550100001"
    assert browser.find_element(By.ID, "phone").get_attribute("aria-invalid") == "true"
    checker.page("step-1-phone-error")
    submit(browser, "phone", "+1 555 010 0001", "send-code")

    # Step 2: the code from the development inbox; a wrong one first.
    wait(browser, lambda b: path_of(b) == "/upgrade/code")
    assert "+1 555 010 0001" in browser.find_element(By.ID, "code-intro").text  # as people read it
    assert browser.find_element(By.ID, "resend-code").get_attribute("disabled")  # the countdown runs
    # It moves every second where the member sees it (screen readers hear it every 15 s, from a live region).
    shown_first = browser.find_element(By.ID, "resend-countdown").text
    wait(browser, lambda b: b.find_element(By.ID, "resend-countdown").text != shown_first, timeout=3)
    assert browser.find_element(By.ID, "resend-announce").get_attribute("aria-live") == "polite"
    checker.page("step-2-code")
    code = latest_code(browser, gw, checker)
    browser.back()
    wait(browser, lambda b: path_of(b) == "/upgrade/code")
    wrong = "000000" if code != "000000" else "111111"
    submit(browser, "code", wrong, "verify-code")
    assert "4 tries left" in error_text(browser)
    checker.page()
    submit(browser, "code", code, "verify-code")

    # Step 3: the username; reserved and taken names are refused, a free one accepted.
    wait(browser, lambda b: path_of(b) == "/upgrade/username")
    field = browser.find_element(By.ID, "username")
    field.send_keys("Olive.Taken")
    wait(browser, lambda b: "taken" in b.find_element(By.ID, "username-availability").text)
    checker.page("step-3-username-taken")
    page = browser.find_element(By.TAG_NAME, "html")
    browser.find_element(By.ID, "choose-username").click()
    wait(browser, replaced(page))
    assert "taken" in error_text(browser)
    submit(browser, "username", "admin", "choose-username")
    assert "reserved" in error_text(browser)
    # The live check without a network: a toast says so; the form still works.
    browser.set_network_conditions(offline=True, latency=0, download_throughput=0, upload_throughput=0)
    browser.find_element(By.ID, "username").send_keys("x")
    toast = wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#toasts .toast"))[0]
    assert toast.find_element(By.CLASS_NAME, "toast-message").text == "Network error. Please check your connection."
    # Dismissed by its button at once; another one goes by itself.
    toast.find_element(By.CLASS_NAME, "toast-close").click()
    assert not browser.find_elements(By.CSS_SELECTOR, "#toasts .toast")
    # (The pointer is moved off first: a toast under the pointer waits, as it should.)
    ActionChains(browser).move_to_element(browser.find_element(By.ID, "username")).perform()
    browser.find_element(By.ID, "username").send_keys("y")
    wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#toasts .toast"))
    wait(browser, lambda b: not b.find_elements(By.CSS_SELECTOR, "#toasts .toast"), timeout=10)
    browser.set_network_conditions(offline=False, latency=0, download_throughput=-1, upload_throughput=-1)
    # The upgrade open in a second tab too: the name is chosen there; this older tab's choice is not used, and
    # its next page says why.
    older = browser.current_window_handle
    browser.switch_to.new_window("tab")
    browser.get(gw.url + "/upgrade/username")
    submit(browser, "username", "alice.archer", "choose-username")
    wait(browser, lambda b: path_of(b) == "/upgrade/pin")
    browser.close()
    browser.switch_to.window(older)
    field = browser.find_element(By.ID, "username")
    field.clear()
    field.send_keys("alice.other")
    browser.find_element(By.ID, "choose-username").click()
    wait(browser, lambda b: path_of(b) == "/upgrade/pin?elsewhere=1")
    assert "in another tab or window" in browser.find_element(By.ID, "step-status").text
    # Back, past the pages that answered refused forms: no "Confirm Form Resubmission" (those pages stand in the
    # history as the step's own address, which leads to where the flow is).
    browser.back()
    wait(browser, lambda b: path_of(b) in ("/upgrade/username", "/upgrade/pin") and b.find_elements(By.TAG_NAME, "h1"))
    assert "ERR_CACHE_MISS" not in browser.page_source
    browser.get(gw.url + "/upgrade/pin")

    # Step 4: the PIN, twice.
    wait(browser, lambda b: path_of(b) == "/upgrade/pin")
    checker.page("step-4-pin")
    browser.find_element(By.ID, "pin").send_keys("2580")
    submit(browser, "pin-confirmation", "2581", "set-pin")
    assert "not the same" in error_text(browser)
    # The mismatch is shown at the confirmation field too, and the field says it is wrong.
    assert "not the same" in browser.find_element(By.ID, "pin-confirmation-error").text
    assert browser.find_element(By.ID, "pin-confirmation").get_attribute("aria-invalid") == "true"
    checker.page()
    browser.find_element(By.ID, "pin").send_keys("2580")
    browser.find_element(By.ID, "pin-confirmation").send_keys("2580")
    browser.find_element(By.ID, "set-pin").click()

    # Step 5: the profile, name from the organization account.
    wait(browser, lambda b: path_of(b) == "/upgrade/profile")
    assert browser.find_element(By.ID, "display-name").get_attribute("value") == "Alice Archer"
    checker.page("step-5-profile")
    page = browser.find_element(By.TAG_NAME, "html")
    browser.find_element(By.ID, "finish").click()
    wait(browser, replaced(page))
    assert "Choose who can find you" in error_text(browser)
    assert browser.find_element(By.ID, "display-name").get_attribute("value") == "Alice Archer"
    browser.find_element(By.ID, "discoverable-everybody").click()
    browser.find_element(By.ID, "finish").click()

    # Done: back where the member was heading, with no banner and the chat features open.
    wait(browser, lambda b: path_of(b).startswith("/upgrade/done"))
    assert "alice.archer" in browser.find_element(By.ID, "done-text").text
    # Besides the way back, the features just unlocked.
    assert [browser.find_element(By.ID, f"open-{tab}").get_attribute("href") for tab in ("chats", "calls", "stories")] == [
        gw.url + "/chats", gw.url + "/calls", gw.url + "/stories"]
    checker.page("done")
    browser.find_element(By.ID, "continue").click()
    wait(browser, lambda b: path_of(b) == "/apps/links/")
    # The bar stays, without the banner and with the chat features open.
    assert not bar_has(browser, "#gatehouse-banner") and not bar_has(browser, ".locked")
    assert in_bar(browser, "#bar-chats").get_attribute("href") == gw.url + "/chats"
    checker.page("bar-registered")
    assert_registered_features(browser, gw, checker)

    # The next sign-in is `registered` straight away.
    browser.get(gw.url + "/")
    secrets = {"code": code, "wrong code": wrong, "PIN": "2580", "demo password": gw.dev_password}
    secrets["first session"] = browser.get_cookie("gatehouse_session")["value"]
    stored = gw.stored_secrets()
    sign_out(browser)
    # The Chats deep link opens the chat app itself now.
    sign_in(browser, gw, "alice", "/chats", lands_on="/apps/chat/")
    browser.get(gw.url + "/apps/links/")
    assert not bar_has(browser, "#gatehouse-banner")
    assert {"/", "/chats", "/upgrade/phone", "/upgrade/code", "/upgrade/username", "/upgrade/pin", "/upgrade/profile"} <= set(
        p.split("?")[0] for p in checker.checked
    )

    # The identity assertion an app got (now at level registered).
    browser.get(gw.url + "/apps/whoami/")
    assertion = browser.find_element(By.XPATH, '//th[.="X-Gatehouse-Assertion"]/following-sibling::td').text
    assert assertion.count(".") == 2 and browser.find_element(By.ID, "claim-level").text == "registered"
    secrets.update({"assertion": assertion, "assertion's signature": assertion.rsplit(".", 1)[1]})

    # Nothing the journey used that could let somebody in is in the gateway's log: codes, the PIN, the password,
    # session cookies, the provider's tokens (access tokens go to apps that ask), the sessions' CSRF tokens, the
    # assertions apps get.
    secrets["second session"] = browser.get_cookie("gatehouse_session")["value"]
    stored += gw.stored_secrets()
    assert len(stored) >= 6
    # The store keeps them sealed: a copy of its files shows none of them.
    copy = gw.stored_bytes()
    assert b"gh1:" in copy and not [value for value in stored if value.encode() in copy]
    secrets.update({f"stored secret {index}": value for index, value in enumerate(stored)})
    gw.assert_log_holds_none_of(secrets)

    # The operators' counters moved as the journey did: olive's registration and alice's, one tap on the banner.
    samples = gw.metrics()
    assert samples["gatehouse_registrations_completed_total"] == 2
    assert samples["gatehouse_banner_tapped_total"] == 1
    assert samples["gatehouse_banner_shown_total"] >= 1
    assert samples["gatehouse_sign_in_successes_total"] >= 3
    assert samples["gatehouse_verification_codes_sent_total"] >= 2
    assert samples['gatehouse_http_requests_total{route="upgrade",status="4xx",app=""}'] >= 5  # the refused entries
    assert samples['gatehouse_http_requests_total{route="proxy",status="2xx",app="links"}'] >= 3


def assert_registered_features(browser, gw, checker):
    # The account menu shows what the member chose: the username, and the phone number as people read it.
    browser.get(gw.url + "/")
    browser.find_element(By.ID, "member-menu-button").click()
    wait(browser, lambda b: b.find_element(By.ID, "member-username").is_displayed())
    assert browser.find_element(By.ID, "member-username").text
    phone = browser.find_element(By.ID, "member-phone").text
    assert phone.startswith("+") and " " in phone, phone
    checker.page("portal-menu-registered")
    browser.get(gw.url + "/chats")
    wait(browser, lambda b: path_of(b) == "/apps/chat/")
    assert "Only registered members" in browser.find_element(By.ID, "chat").text
    browser.get(gw.url + "/calls")
    checker.page("calls")
    browser.find_element(By.ID, "start-audio-call").click()
    wait(browser, lambda b: b.find_elements(By.ID, "call-camera"))
    assert browser.find_element(By.ID, "call-call").text == "audio"
    assert browser.find_element(By.ID, "call-camera").text == "off"
    assert browser.find_element(By.ID, "call-microphone").text == "on"
    assert browser.find_element(By.ID, "call-audio_output").text == "earpiece"
    browser.get(gw.url + "/calls")
    browser.find_element(By.ID, "start-video-call").click()
    wait(browser, lambda b: b.find_elements(By.ID, "call-camera"))
    assert browser.find_element(By.ID, "call-camera").text == "on"
    browser.get(gw.url + "/stories")
    wait(browser, lambda b: path_of(b) == "/apps/stories/")


def keys(browser, *sequence):
    ActionChains(browser).send_keys(*sequence).perform()


def tab_to(browser, element_id, limit=60):
    """Moves focus with Tab only, as a keyboard user would, until `element_id` has it."""
    for _ in range(limit):
        keys(browser, Keys.TAB)
        if browser.switch_to.active_element.get_attribute("id") == element_id:
            return
    raise AssertionError(f"Tab never reached #{element_id} on {browser.current_url}")


def test_member_without_a_phone_claim_upgrades_with_the_keyboard_only(browser, dev_gateway, checker):
    gw = dev_gateway
    sign_in(browser, gw, "bob")
    # From the portal, by keyboard: the Chats tab, then "Add Features".
    tab_to(browser, "tab-chats")
    keys(browser, Keys.ENTER)
    wait(browser, lambda b: path_of(b) == "/chats")
    tab_to(browser, "add-features")
    keys(browser, Keys.ENTER)

    wait(browser, lambda b: path_of(b) == "/upgrade/phone")
    assert browser.find_element(By.ID, "phone").get_attribute("value") == ""
    assert not browser.find_elements(By.ID, "phone-from-sso")
    checker.page("step-1-phone-manual")
    tab_to(browser, "phone")
    keys(browser, "+44 20 7946 0958", Keys.ENTER)

    wait(browser, lambda b: path_of(b) == "/upgrade/code")
    tab_to(browser, "dev-inbox-link")
    keys(browser, Keys.ENTER)
    wait(browser, lambda b: path_of(b) == "/dev/inbox")
    code = browser.find_element(By.CSS_SELECTOR, "#inbox li .code").text
    assert "+44 2079460958" in browser.find_element(By.ID, "inbox").text  # no grouping guessed for the UK
    tab_to(browser, "inbox-back")
    keys(browser, Keys.ENTER)
    wait(browser, lambda b: path_of(b) == "/upgrade/code")
    tab_to(browser, "code")
    keys(browser, code, Keys.ENTER)

    wait(browser, lambda b: path_of(b) == "/upgrade/username")
    tab_to(browser, "username")
    keys(browser, "bob_baker", Keys.ENTER)

    wait(browser, lambda b: path_of(b) == "/upgrade/pin")
    tab_to(browser, "pin")
    page = browser.find_element(By.TAG_NAME, "html")
    keys(browser, "1234", Keys.TAB, "1234", Keys.ENTER)
    wait(browser, replaced(page))
    assert "too easy" in error_text(browser)
    # Focus went to the error summary; on to the fields again.
    tab_to(browser, "pin")
    keys(browser, "9157", Keys.TAB, "9157", Keys.ENTER)

    wait(browser, lambda b: path_of(b) == "/upgrade/profile")
    tab_to(browser, "discoverable-everybody")
    keys(browser, Keys.ARROW_DOWN)  # arrows move within the radio group and select
    assert browser.find_element(By.ID, "discoverable-nobody").is_selected()
    tab_to(browser, "finish")
    keys(browser, Keys.ENTER)

    wait(browser, lambda b: path_of(b).startswith("/upgrade/done"))
    tab_to(browser, "continue")
    keys(browser, Keys.ENTER)
    # Heading for Chats: the chat app opens.
    wait(browser, lambda b: path_of(b) == "/apps/chat/")


def test_cancelled_and_failed_flows_leave_the_member_at_sso(browser, dev_gateway, checker):
    gw = dev_gateway
    sign_in(browser, gw, "olive")
    browser.get(gw.url + "/stories")
    browser.find_element(By.ID, "add-features").click()
    wait(browser, lambda b: path_of(b) == "/upgrade/phone")

    # Cancel: back where the member started (Stories), told so, nothing kept, still at `sso`.
    browser.find_element(By.ID, "cancel").click()
    toast = wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#toasts .toast"))[0]
    assert "registration cancelled" in toast.text
    assert path_of(browser) == "/stories"  # the toast's parameter gone, so that a reload does not repeat it
    checker.page()
    browser.get(gw.url + "/stories")
    assert browser.find_element(By.ID, "feature-locked").is_displayed()

    # Start again and get to the code step; a restart of the gateway does not lose the flow.
    browser.find_element(By.ID, "add-features").click()
    wait(browser, lambda b: path_of(b) == "/upgrade/phone")
    browser.find_element(By.ID, "send-code").click()
    wait(browser, lambda b: path_of(b) == "/upgrade/code")
    gw.restart()
    browser.get(gw.url + "/stories")
    browser.find_element(By.ID, "add-features").click()
    wait(browser, lambda b: path_of(b) == "/upgrade/code?resumed=1")
    assert "continuing where you left off" in browser.find_element(By.ID, "step-status").text

    # Five wrong codes burn the code and fail the flow: back to the web apps with the toast.
    for attempt in range(5):
        submit(browser, "code", "99999" + str(attempt), "verify-code")
        if attempt < 4:
            error_text(browser)
    wait(browser, lambda b: path_of(b) == "/")
    toast = wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#toasts .toast"))[0]
    # It says what failed, offers to start again, and is announced.
    assert toast.find_element(By.CLASS_NAME, "toast-message").text == (
        "Signal registration stopped: the code was entered wrongly five times. Start again to get a new code.")
    action = toast.find_element(By.CLASS_NAME, "toast-action")
    assert action.text == "Try again"
    assert toast.find_element(By.CLASS_NAME, "toast-close").get_attribute("aria-label") == "Dismiss"
    assert browser.find_element(By.ID, "toasts").get_attribute("role") == "status"
    assert browser.find_element(By.ID, "toasts").get_attribute("aria-live") == "polite"
    assert "reason=" not in browser.current_url and "toast=" not in browser.current_url
    checker.page("failure-toast")
    # With the keyboard on it, it waits past its time (10 s); then "Try again" starts a new flow.
    browser.execute_script("arguments[0].focus()", action)
    time.sleep(11)
    assert toast.is_displayed()
    action.click()
    wait(browser, lambda b: path_of(b) == "/upgrade/phone")
    # Still `sso`: the banner is back on proxied pages.
    browser.get(gw.url + "/apps/links/")
    assert bar_has(browser, "#gatehouse-banner")


def register_by_http(gw, account, username, display_name="Olive", phone="+15550100003"):
    """Registers a demo member without a browser: sign-in form, then every step as plain form posts; the member's
    signed-in `requests` session."""
    import re

    session = gw.member_session(account)
    response = session.get(gw.url + "/upgrade?from=portal")
    csrf = re.search(r'name="csrf" value="([^"]+)"', response.text).group(1)

    def post(path, data):
        return session.post(gw.url + path, data={"csrf": csrf, **data}, allow_redirects=True)

    post("/upgrade/phone", {"phone": phone})
    inbox = session.get(gw.url + "/dev/inbox").text
    code = re.search(r'class="code">(\d{6})<', inbox).group(1)
    post("/upgrade/code", {"code": code})
    post("/upgrade/username", {"username": username})
    post("/upgrade/pin", {"pin": "8642", "pin_confirmation": "8642"})
    response = post("/upgrade/profile", {"display_name": display_name, "discoverability": "nobody"})
    assert "/upgrade/done" in response.url or "/apps/chat/" in response.url, response.url
    return session


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_page_gatehouse_renders_passes_axe(browser, dev_gateway, checker, scheme):
    """The pages outside the upgrade flow too: sign-in with its messages, the development provider, errors, and the
    portal, in light and dark mode."""
    gw = dev_gateway
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
    shot = (lambda name: f"{name}-dark" if scheme == "dark" else name)
    for path in ("/signin", "/signin?expired=1", "/signin?error=access_denied", "/signed-out"):
        browser.get(gw.url + path)
        checker.page(shot("signin") if path == "/signin" else None)
    open_development_sign_in(browser, gw, "/")
    checker.page(shot("dev-sign-in"))
    browser.find_element(By.ID, "account-bob").click()
    browser.find_element(By.ID, "password").send_keys("wrong")
    browser.find_element(By.ID, "dev-continue").click()
    wait(browser, EC.presence_of_element_located((By.ID, "dev-error")))
    checker.page()
    browser.find_element(By.ID, "password").clear()
    browser.find_element(By.ID, "password").send_keys(gw.dev_password)
    browser.find_element(By.ID, "dev-continue").click()
    wait(browser, lambda b: path_of(b) == "/")
    checker.page(shot("portal"))
    for path in (
        "/chats", "/calls", "/stories", "/nowhere", "/apps/leave/", "/apps/unknown/", "/apps/chat/", "/upgrade/done", "/dev/inbox",
        "/leaving?to=https%3A%2F%2Foutside.example%2Fnews",
    ):
        browser.get(gw.url + path)
        checker.page()
    browser.get(gw.url + "/?toast=registration_failed")
    wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#toasts .toast"))
    checker.page()
    if scheme == "dark":
        background = browser.execute_script("return getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(17, 20, 24)", background


def test_funnel_command_reads_the_same_store(browser, dev_gateway):
    import json
    import subprocess

    from conftest import BINARY

    gw = dev_gateway
    register_by_http(gw, "olive", "olive.funnel")
    config = gw.command[gw.command.index("--config") + 1]
    result = subprocess.run(
        [str(BINARY), "funnel", "--development", "--config", config, "--days", "1", "--json"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    steps = {step["event"]: step for step in report["steps"]}
    assert steps["sso_login_success"]["members"] == 1
    assert steps["registration_started"]["members"] == 1
    assert steps["registration_completed"]["members"] == 1
    text = subprocess.run([str(BINARY), "funnel", "--development", "--config", config], capture_output=True, text=True, timeout=60)
    assert text.returncode == 0 and "registration_completed" in text.stdout
    bad = subprocess.run([str(BINARY), "funnel", "--development", "--config", config, "--days", "0"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "days must be" in bad.stderr
