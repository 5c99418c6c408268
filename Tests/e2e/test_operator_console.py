"""The operator console in a real browser: an operator's view after a journey (the funnel's chart and its table
agree with the JSON twin), axe clean at 1280 and 390 pixels, light and dark, nothing overflowing on a phone."""

import requests
from selenium.webdriver.common.by import By

from test_browser_journey import path_of, wait
from test_upgrade_journey import Checker, screenshots, sign_in


def test_an_operator_reads_the_console(browser, dev_gateway, tmp_path):
    gw = dev_gateway
    checker = Checker(browser, gw, screenshots(tmp_path))
    sign_in(browser, gw, "olive")
    browser.get(gw.url + "/apps/visits/")
    browser.get(gw.url + "/operator")
    wait(browser, lambda b: path_of(b) == "/operator")
    cookies = {c["name"]: c["value"] for c in browser.get_cookies()}
    days = requests.get(gw.url + "/operator/funnel/days", cookies=cookies, timeout=10).json()
    today = days[-1]
    row = browser.find_element(By.XPATH, f'//table[@id="funnel-table"]//th[.="{today["day"]}"]/..')
    assert row.find_elements(By.TAG_NAME, "td")[0].text == str(today["sso_login_success"]) == "1"
    bars = browser.find_elements(By.CSS_SELECTOR, "#funnel-chart rect")
    assert len(bars) == 7 * 6
    sessions = requests.get(gw.url + "/operator/sessions", cookies=cookies, timeout=10).json()
    assert browser.find_element(By.ID, "live-sessions").text == str(sessions["sessions"])
    checker.every_width_and_scheme("operator-console")
