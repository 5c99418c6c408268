"""The operator console in a real browser: found from the account menu, an operator's view after a journey (the
funnel's chart and its table agree with the JSON twin), its sections in a header, the audit trail filtered, axe clean
at 1280 and 390 pixels, light and dark, nothing overflowing on a phone, labels readable and captions whole there; an
app added in the console's catalog (refused first, with its problem), its tile previewed, then served."""

import requests
from selenium.webdriver.common.by import By

from test_browser_journey import path_of, wait
from test_upgrade_journey import Checker, screenshots, sign_in


def test_an_operator_reads_the_console(browser, dev_gateway, tmp_path):
    gw = dev_gateway
    checker = Checker(browser, gw, screenshots(tmp_path))
    sign_in(browser, gw, "olive")
    browser.get(gw.url + "/apps/visits/")
    browser.get(gw.url + "/")
    # The console is in an operator's account menu.
    browser.find_element(By.ID, "member-menu-button").click()
    browser.find_element(By.ID, "member-operator-console").click()
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
    browser.set_window_size(390, 900)
    # The chart's day labels stay readable on a phone (it scrolls instead of shrinking), and no caption is cut.
    label_height = browser.execute_script("return document.querySelector('#funnel-chart text').getBoundingClientRect().height")
    assert label_height >= 9, label_height
    for caption in browser.find_elements(By.CSS_SELECTOR, ".table-caption"):
        assert browser.execute_script("const r = arguments[0].getBoundingClientRect(); return r.right <= window.innerWidth", caption)
    browser.set_window_size(1280, 900)
    # The audit trail from the console's header: the visit is there, and a day on its own line.
    browser.find_element(By.ID, "operator-nav-audit").click()
    wait(browser, lambda b: path_of(b) == "/operator/audit")
    opened = browser.find_elements(By.CSS_SELECTOR, 'tr[data-action="app_opened"]')
    assert any("visits" in row.text for row in opened), [row.text for row in opened]
    time = browser.find_element(By.CSS_SELECTOR, "#audit-table time")
    assert time.size["height"] < 1.6 * float(time.value_of_css_property("line-height").rstrip("px") or 20)
    browser.find_element(By.ID, "audit-app").send_keys("Visit")
    browser.find_element(By.ID, "audit-show").click()
    wait(browser, lambda b: "app=visits" in b.current_url)
    checker.every_width_and_scheme("operator-audit")
    browser.find_element(By.ID, "operator-nav-members").click()
    wait(browser, lambda b: path_of(b) == "/operator/members")
    checker.every_width_and_scheme()
    # The app catalog: the file's apps listed, a new app's form with its problems, then its tile, each page clean.
    browser.find_element(By.ID, "operator-nav-catalog").click()
    wait(browser, lambda b: path_of(b) == "/operator/catalog")
    # The demo apps' server, which the new app is another view of.
    demo_upstream = browser.find_element(By.CSS_SELECTOR, '#file-apps tr[data-app="visits"] td.path').text
    browser.find_element(By.ID, "app-add").click()
    wait(browser, lambda b: path_of(b) == "/operator/catalog/new")
    browser.find_element(By.ID, "app-slug").send_keys("notes")
    browser.find_element(By.ID, "app-name").send_keys("Notes")
    browser.find_element(By.ID, "app-upstream").send_keys("https://notes.example.net/")
    browser.find_element(By.ID, "app-preview").click()
    wait(browser, lambda b: b.find_elements(By.ID, "error-summary"))
    assert "outside the allowlist" in browser.find_element(By.ID, "error-summary").text
    checker.every_width_and_scheme("operator-catalog-problems")
    upstream = browser.find_element(By.ID, "app-upstream")
    upstream.clear()
    upstream.send_keys(demo_upstream)
    browser.find_element(By.ID, "app-description").send_keys("What the team keeps")
    browser.find_element(By.ID, "app-preview").click()
    wait(browser, lambda b: b.find_elements(By.ID, "app-tile-preview"))
    assert "What the team keeps" in browser.find_element(By.ID, "app-tile-preview").text
    checker.every_width_and_scheme("operator-catalog-preview")
    browser.find_element(By.ID, "app-save").click()
    wait(browser, lambda b: "done=added" in b.current_url)
    assert browser.find_element(By.CSS_SELECTOR, '#console-apps tr[data-app="notes"]').get_attribute("data-status") == "served"
    checker.every_width_and_scheme("operator-catalog")
    # The last change names the operator as people know her, beside the subject id.
    assert "Olive Operator" in browser.find_element(By.CSS_SELECTOR, '#console-apps tr[data-app="notes"]').text
    # Remove asks first; the list then offers the undo, which brings the app back.
    browser.find_element(By.ID, "app-remove-notes").click()
    wait(browser, lambda b: b.find_elements(By.ID, "app-remove-confirm"))
    assert "Notes" in browser.find_element(By.ID, "app-remove-text").text
    checker.every_width_and_scheme()
    browser.find_element(By.ID, "app-remove-confirm").click()
    wait(browser, lambda b: "done=removed" in b.current_url)
    assert not browser.find_elements(By.CSS_SELECTOR, '#console-apps tr[data-app="notes"]')
    checker.every_width_and_scheme()
    browser.find_element(By.ID, "app-undo").click()
    wait(browser, lambda b: "done=restored" in b.current_url)
    assert browser.find_element(By.CSS_SELECTOR, '#console-apps tr[data-app="notes"]').get_attribute("data-status") == "served"
