"""Your sessions, in two real browsers: the laptop sees both of the member's browsers, "this browser" marked, and
ends the phone's session with the keyboard alone; the phone lands on the sign-in page with the expired message. The page passes axe at
1280 and 390 pixels, light and dark."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from conftest import start_browser
from test_browser_journey import path_of, wait
from test_upgrade_journey import Checker, screenshots, sign_in


@pytest.fixture
def phone():
    driver = start_browser(["--user-agent=Mozilla/5.0 (Android 14; Mobile; rv:128.0) Gecko/128.0 Firefox/128.0"])
    yield driver
    driver.quit()


def test_a_member_ends_another_browsers_session(browser, phone, dev_gateway, tmp_path):
    gw = dev_gateway
    checker = Checker(browser, gw, screenshots(tmp_path))
    sign_in(phone, gw, "alice")
    sign_in(browser, gw, "alice")

    # From the account menu.
    browser.find_element(By.ID, "member-menu-button").click()
    browser.find_element(By.ID, "member-sessions").click()
    wait(browser, lambda b: path_of(b) == "/account/sessions")
    sessions = browser.find_elements(By.CSS_SELECTOR, "#session-list .session")
    assert len(sessions) == 2
    assert browser.find_element(By.CSS_SELECTOR, ".session[data-current] #this-browser").text == "This browser"
    checker.every_width_and_scheme("sessions")

    # The phone's entry says what it is, and its button says which session it ends; the keyboard alone ends it.
    end = browser.find_element(By.CSS_SELECTOR, '.session:not([data-current]) button.end-session')
    assert end.get_attribute("aria-label") == "Sign out Firefox on Android"
    end.send_keys(Keys.ENTER)
    wait(browser, lambda b: "ended=one" in b.current_url)
    assert "That session has ended" in browser.find_element(By.ID, "sessions-notice").text
    assert len(browser.find_elements(By.CSS_SELECTOR, "#session-list .session")) == 1
    checker.page()

    # The phone, at its next page, is signed out and told its session ended.
    phone.get(gw.url + "/")
    wait(phone, lambda b: path_of(b) == "/signin?expired=1")
    assert "Your session has expired" in phone.find_element(By.TAG_NAME, "main").text
