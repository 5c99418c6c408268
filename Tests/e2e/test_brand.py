"""The organization's look in a real browser: `brand.accent_colour` and `brand.logo` on the gateway's pages and in the
bar on an app's page, in the light and the dark theme, and `prefers-contrast: more` honoured by both; axe (WCAG 2.1
AA) passes on the branded pages in every one of those."""

import pytest
from selenium.webdriver.common.by import By

from conftest import start_gateway
from test_browser_journey import in_bar, wait
from test_upgrade_journey import Checker, sign_in

ACCENT = "#b00020"
LOGO = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 40 40" width="40" height="40">
<rect width="40" height="40" rx="8" fill="#b00020"/><path d="M10 28 L20 10 L30 28 Z" fill="#ffffff"/></svg>"""


def rgb(hex_colour):
    value = hex_colour.lstrip("#")
    return "rgb(%d, %d, %d)" % tuple(int(value[i:i + 2], 16) for i in (0, 2, 4))


def media(browser, scheme, contrast="no-preference"):
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [
        {"name": "prefers-color-scheme", "value": scheme}, {"name": "prefers-contrast", "value": contrast}]})


def page_accent(browser):
    return browser.execute_script("return getComputedStyle(document.documentElement).getPropertyValue('--accent').trim()")


@pytest.fixture
def branded(tmp_path):
    logo = tmp_path / "logo.svg"
    logo.write_text(LOGO)
    gw = start_gateway(tmp_path, "dev", extra={"brand": {"accent_colour": ACCENT, "logo": str(logo)}})
    yield gw
    gw.running.stop()


def test_the_accent_and_the_logo_in_both_themes_and_with_more_contrast(browser, branded, tmp_path):
    gw = branded
    checker = Checker(browser, gw, tmp_path)
    media(browser, "light")
    browser.get(gw.url + "/signin")
    logo = browser.find_element(By.ID, "brand-logo")
    assert browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", logo)
    assert logo.get_attribute("alt") == "Gatehouse"
    checker.page()
    sign_in(browser, gw, "alice")
    header_logo = browser.find_element(By.CSS_SELECTOR, "#brand-name .brand-logo")
    assert browser.execute_script("return arguments[0].naturalWidth > 0", header_logo)

    seen = {}
    for scheme in ("light", "dark"):
        for contrast in ("no-preference", "more"):
            media(browser, scheme, contrast)
            browser.get(gw.url + "/")
            seen[(scheme, contrast)] = page_accent(browser)
            checker.page()
    assert seen[("light", "no-preference")] == ACCENT
    # The dark theme has its own (lighter) accent, and more contrast a stronger one in each theme.
    assert len(set(seen.values())) == 4, seen
    media(browser, "light", "more")
    browser.get(gw.url + "/")
    muted, text = browser.execute_script(
        "const m = document.querySelector('.muted'); return [getComputedStyle(m).color, getComputedStyle(document.body).color]")
    assert muted == text, "secondary text is as strong as the rest with more contrast"

    # The bar on an app's page: the logo in place of the initial, and the accent as the pages have it.
    for scheme, contrast in (("light", "no-preference"), ("light", "more"), ("dark", "no-preference")):
        media(browser, scheme, contrast)
        browser.get(gw.url + "/apps/links/")
        wait(browser, lambda b: in_bar(b, "#brand-logo"))
        bar_logo = in_bar(browser, "#brand-logo")
        assert browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", bar_logo)
        bar_accent = browser.execute_script(
            "return getComputedStyle(document.getElementById('gatehouse-bar').shadowRoot.getElementById('bar')).getPropertyValue('--accent').trim()")
        if scheme == "light":
            assert bar_accent == seen[(scheme, contrast)], (scheme, contrast, bar_accent)
        else:
            # The bar follows the page under it: dark only where the app's page is dark too.
            assert bar_accent in (seen[("dark", "no-preference")], seen[("light", "no-preference")])
        checker.page()
    media(browser, "light")
