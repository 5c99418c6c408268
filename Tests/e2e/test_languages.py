"""The upgrade journey in German (the browser asks for it) and in Arabic (the member chooses it in the account menu,
and the pages turn right to left): every page in that language, axe clean at 1280 and 390 px in light and dark,
nothing overflowing sideways. Screenshots for docs/ with `GATEHOUSE_SCREENSHOTS=docs/screenshots`."""

import json
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from conftest import start_browser
from test_browser_journey import in_bar, open_development_sign_in, path_of, wait
from test_upgrade_journey import Checker, error_text, latest_code, replaced, screenshots, submit
from test_gateway_bar import open_app, whole_name_shown

STRINGS = Path(__file__).resolve().parents[2] / "Strings"


def strings(language):
    """The language's table as members read it (the development gateway's names filled in)."""
    table = json.loads((STRINGS / f"{language}.json").read_text())
    return {key: text.replace("{chat}", "Signal").replace("{gateway}", "Gatehouse") for key, text in table.items()}


@pytest.fixture
def german_browser():
    driver = start_browser(("--accept-lang=de-DE,de",))
    yield driver
    driver.quit()


def sign_in(browser, gw, account):
    open_development_sign_in(browser, gw, "/")
    browser.find_element(By.ID, f"account-{account}").click()
    browser.find_element(By.ID, "password").send_keys(gw.dev_password)
    browser.find_element(By.ID, "dev-continue").click()
    wait(browser, lambda b: path_of(b) == "/")


def filled(t, key, **values):
    """`t[key]` with its (Latin) values filled as the gateway fills them: each isolated left to right in a
    right-to-left language (LRI … PDI), so that it keeps its own order."""
    text = t[key]
    for name, value in values.items():
        text = text.replace("{" + name + "}", f"\u2066{value}\u2069" if t["dir"] == "rtl" else value)
    return text


def assert_language(browser, language, t):
    html = browser.find_element(By.TAG_NAME, "html")
    assert (html.get_attribute("lang"), html.get_attribute("dir")) == (language, t["dir"]), browser.current_url


def upgrade(browser, gw, checker, language, phone=None):
    """From the portal to the unlocked features, every page in `language` and checked at both widths and schemes."""
    t = strings(language)
    shot = lambda name: f"{language}-{name}"  # noqa: E731
    assert_language(browser, language, t)
    assert browser.find_element(By.TAG_NAME, "h1").text == t["portal_title"]
    checker.every_width_and_scheme(shot("portal"))
    browser.find_element(By.ID, "member-menu-button").click()
    wait(browser, lambda b: b.find_element(By.ID, "sign-out").is_displayed())
    assert browser.find_element(By.ID, f"language-{language}").get_attribute("aria-current") == "true"
    checker.every_width_and_scheme(shot("portal-menu"))

    # The bar inside an app speaks the language too, in its own direction.
    browser.get(gw.url + "/apps/links/")
    nav = in_bar(browser, "#bar")
    assert (nav.get_attribute("lang"), nav.get_attribute("dir")) == (language, t["dir"])
    assert t["banner_title"] in in_bar(browser, "#gatehouse-banner").text
    assert browser.execute_script("return getComputedStyle(arguments[0]).direction", in_bar(browser, "#row")) == t["dir"]
    checker.every_width_and_scheme(shot("bar"))

    browser.get(gw.url + "/chats")
    assert browser.find_element(By.ID, "feature-locked").text == t["feature_locked_note"]
    checker.every_width_and_scheme(shot("onboarding-prompt"))
    browser.find_element(By.ID, "add-features").click()

    wait(browser, lambda b: path_of(b) == "/upgrade/phone")
    assert_language(browser, language, t)
    checker.every_width_and_scheme(shot("step-1-phone"))
    submit(browser, "phone", "5550100001", "send-code")
    assert t["upgrade_phone_error_missingCountryCode"] in error_text(browser)
    checker.every_width_and_scheme(shot("step-1-phone-error"))
    submit(browser, "phone", phone or "+1 555 010 0001", "send-code")

    wait(browser, lambda b: path_of(b) == "/upgrade/code")
    assert browser.find_element(By.TAG_NAME, "h1").text == t["upgrade_code_heading"]
    checker.every_width_and_scheme(shot("step-2-code"))
    code = latest_code(browser, gw)
    assert_language(browser, language, t)  # the development inbox too
    browser.back()
    wait(browser, lambda b: path_of(b) == "/upgrade/code")
    submit(browser, "code", "000000" if code != "000000" else "111111", "verify-code")
    assert filled(t, "upgrade_code_error_wrong", remaining="4") in error_text(browser)
    submit(browser, "code", code, "verify-code")

    wait(browser, lambda b: path_of(b) == "/upgrade/username")
    submit(browser, "username", "admin", "choose-username")
    assert t["upgrade_username_error_reserved"] in error_text(browser)
    checker.every_width_and_scheme(shot("step-3-username-error"))
    submit(browser, "username", f"member.{language}", "choose-username")

    wait(browser, lambda b: path_of(b) == "/upgrade/pin")
    checker.every_width_and_scheme(shot("step-4-pin"))
    browser.find_element(By.ID, "pin").send_keys("2580")
    submit(browser, "pin-confirmation", "2580", "set-pin")

    wait(browser, lambda b: path_of(b) == "/upgrade/profile")
    checker.every_width_and_scheme(shot("step-5-profile"))
    page = browser.find_element(By.TAG_NAME, "html")
    browser.find_element(By.ID, "discoverable-everybody").click()
    browser.find_element(By.ID, "finish").click()
    wait(browser, replaced(page))

    wait(browser, lambda b: path_of(b).startswith("/upgrade/done"))
    assert browser.find_element(By.ID, "done-title").text == t["upgrade_done_heading"]
    assert browser.find_element(By.ID, "done-text").text == filled(t, "upgrade_done_text", username=f"member.{language}")
    checker.every_width_and_scheme(shot("done"))
    browser.find_element(By.ID, "continue").click()
    wait(browser, lambda b: path_of(b) == "/apps/chat/")


def test_the_upgrade_journey_in_german_as_the_browser_asks(german_browser, dev_gateway, tmp_path):
    browser = german_browser
    checker = Checker(browser, dev_gateway, screenshots(tmp_path))
    browser.get(dev_gateway.url + "/signin")
    assert_language(browser, "de", strings("de"))
    assert browser.find_element(By.ID, "sign-in").text == strings("de")["signin_button"]
    checker.every_width_and_scheme("de-signin")
    sign_in(browser, dev_gateway, "alice")
    upgrade(browser, dev_gateway, checker, "de")


def test_the_upgrade_journey_in_arabic_chosen_in_the_account_menu(browser, dev_gateway, tmp_path):
    checker = Checker(browser, dev_gateway, screenshots(tmp_path))
    sign_in(browser, dev_gateway, "bob")
    assert_language(browser, "en", strings("en"))
    browser.find_element(By.ID, "member-menu-button").click()
    wait(browser, lambda b: b.find_element(By.ID, "language-ar").is_displayed())
    choice = browser.find_element(By.ID, "language-ar")
    assert (choice.text, choice.get_attribute("lang")) == ("العربية", "ar")
    page = browser.find_element(By.TAG_NAME, "html")
    choice.click()
    wait(browser, replaced(page))
    assert path_of(browser) == "/"
    # Right to left: the header's ends swap (the account menu at the left, the name at the right).
    brand = browser.find_element(By.CSS_SELECTOR, ".topbar .brand").rect
    menu = browser.find_element(By.ID, "member-menu-button").rect
    assert menu["x"] < brand["x"]
    # On a phone, beside the banner's button, each app's whole name in the bar.
    browser.set_window_size(390, 900)
    for slug in ["visits", "links", "gzip", "styled"]:
        open_app(browser, dev_gateway, slug)
        assert whole_name_shown(browser), slug
    browser.set_window_size(1280, 900)
    browser.get(dev_gateway.url + "/")
    upgrade(browser, dev_gateway, checker, "ar", phone="+971 4 123 4567")
    # The bar in an app, mirrored too: the way home at the right, the fold control at the left.
    home, collapse = in_bar(browser, "#home").rect, in_bar(browser, "#collapse").rect
    assert collapse["x"] < home["x"]
    # The choice stays with the session: a new tab of the same browser reads Arabic whatever it asks for.
    browser.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {"Accept-Language": "de"}})
    browser.execute_cdp_cmd("Network.enable", {})
    browser.get(dev_gateway.url + "/calls")
    assert_language(browser, "ar", strings("ar"))
