"""Real third-party apps behind Gatehouse, as a member uses them, in headless Chromium: JupyterLab and Django's admin
(PyPI), Prometheus's web UI (Debian). Each on an app host, on a path mount with the prefix set in the app, and on a
path mount without: nine journeys, each asserting what the member sees, with the browser's console free of policy
refusals and failed loads (beyond the few each app has when opened directly, named below)."""

import json
import time
import uuid
from pathlib import Path

import pytest
from selenium.webdriver import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from conftest import start_browser, start_gateway
from real_apps import RealApps
from test_browser_journey import in_bar, open_development_sign_in, wait
from test_upgrade_journey import register_by_http

MOUNTS = ["host", "told", "path"]

# What each app logs in the console when the browser talks to it directly, the same through the gateway: Debian's
# popper.js is an ES module that Prometheus's classic UI loads as a plain script, so Bootstrap's tooltips then fail.
OWN_CONSOLE_ERRORS = {
    "prometheus": ["popper.min.js", "Unexpected token 'export'", "Bootstrap's tooltips require Popper"],
    "jupyter": [],
    "django": ["favicon.ico"],  # the admin site has no icon; the browser asks for one anyway
}


@pytest.fixture(scope="module")
def real_apps(tmp_path_factory):
    apps = RealApps(tmp_path_factory.mktemp("real-apps"))
    yield apps
    apps.stop()


@pytest.fixture(scope="module")
def gw(tmp_path_factory, real_apps):
    gateway = start_gateway(tmp_path_factory.mktemp("gateway"), "dev", extra={"apps": real_apps.catalog()})
    yield gateway
    gateway.running.stop()


def signed_in_browser(gw, account):
    driver = start_browser(capabilities={"goog:loggingPrefs": {"browser": "ALL"}})
    open_development_sign_in(driver, gw, "/")
    driver.find_element(By.ID, f"account-{account}").click()
    driver.find_element(By.ID, "password").send_keys(gw.dev_password)
    driver.find_element(By.ID, "dev-continue").click()
    # Signed in: on the web apps, or on Chats for a registered member (their landing page).
    wait(driver, lambda b: b.current_url.rstrip("/") in (gw.url, gw.url + "/chats"))
    driver.get_log("browser")  # the sign-in's own lines are not the app's
    return driver


@pytest.fixture
def member(gw):
    """A browser signed in as Alice (level `sso`: the bar with the upgrade banner), its console recorded."""
    driver = signed_in_browser(gw, "alice")
    yield driver
    driver.quit()


def base(gw, app, mount):
    """Where the member opens the app on this mount."""
    if mount == "host":
        return f"http://{app}-host.apps.localhost:{gw.port}/"
    return f"{gw.url}/apps/{app}{'-told' if mount == 'told' else ''}/"


def assert_clean_console(browser, app):
    """No policy refusal, no failed load, no script error but those the app has on its own."""
    problems = []
    for entry in browser.get_log("browser"):
        message = entry["message"]
        refused = "Content Security Policy" in message or "Refused to" in message
        failed = entry["level"] == "SEVERE" and not any(own in message for own in OWN_CONSOLE_ERRORS[app])
        if refused or failed:
            problems.append(message[:400])
    assert not problems, "\n".join(problems)


def gateway_bar_clear_of(browser, selector):
    """The element the app shows at `selector` is not under the gateway's bar: clicking its middle reaches it."""
    return browser.execute_script(
        "const e = document.querySelector(arguments[0]); const r = e.getBoundingClientRect();"
        "const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);"
        "return hit === e || e.contains(hit);", selector)


@pytest.mark.parametrize("mount", MOUNTS)
def test_jupyterlab_runs_a_notebook(member, gw, real_apps, mount):
    """Open the lab, create a notebook, run `print(6*7)`, see 42, save: the kernel's WebSocket (with its
    subprotocol), the `_xsrf` cookie its scripts send back, and on the untold path the URLs its scripts build."""
    started = time.time()
    # A fresh workspace: the host and path mounts share one server, which would reopen the last journey's notebook.
    member.get(base(gw, "jupyter", mount) + "lab?reset")
    card = wait(member, lambda b: b.find_element(By.CSS_SELECTOR, '.jp-LauncherCard[data-category="Notebook"]'), timeout=60)
    # The lab's own menu stays clickable: the bar goes where it covers none of the app's controls.
    wait(member, lambda b: gateway_bar_clear_of(b, "#jp-menu-panel"), timeout=10)
    card.click()
    notebook = ".jp-NotebookPanel:not(.lm-mod-hidden) "
    wait(member, lambda b: b.find_element(By.CSS_SELECTOR, notebook + ".jp-Cell .cm-content"), timeout=60)
    # The kernel is reached through its WebSocket: idle once it answered.
    wait(member, lambda b: "Idle" in b.find_element(By.CSS_SELECTOR, ".jp-StatusBar-Widget").text, timeout=90)
    # Found again: the lab may draw the cell anew while its kernel starts.
    editor = wait(member, lambda b: b.find_element(By.CSS_SELECTOR, notebook + ".jp-Cell .cm-content"), timeout=10)
    editor.click()
    editor.send_keys("print(6*7)")
    ActionChains(member).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()
    wait(member, lambda b: any(o.text.strip() == "42" for o in b.find_elements(By.CSS_SELECTOR, notebook + ".jp-OutputArea-output")), timeout=60)
    # Saved from the notebook's toolbar, as a member does.
    member.find_element(By.CSS_SELECTOR, '.jp-NotebookPanel:not(.lm-mod-hidden) [data-jp-item-name="save"] :is(jp-button, button)').click()
    # The first save of an untitled notebook offers to name it: the name it has is kept.
    wait(member, lambda b: b.find_element(By.CSS_SELECTOR, ".jp-Dialog .jp-mod-accept"), timeout=10).click()
    folder = real_apps.told_notebooks if mount == "told" else real_apps.notebooks

    def saved():
        for notebook in Path(folder).glob("*.ipynb"):
            if notebook.stat().st_mtime >= started - 1:
                cells = json.loads(notebook.read_text()).get("cells", [])
                if any("print(6*7)" in "".join(c.get("source", "")) and "42" in json.dumps(c.get("outputs", [])) for c in cells):
                    return True
        return False

    wait(member, lambda b: saved(), timeout=30)
    assert_clean_console(member, "jupyter")


@pytest.mark.parametrize("mount", MOUNTS)
def test_django_admin_adds_a_group(member, gw, real_apps, mount):
    """Log in with the app's own form (its CSRF check sees its own origin), add a group, see it listed, log out."""
    admin = base(gw, "django", mount) + "admin/"
    member.get(admin)
    wait(member, lambda b: b.find_element(By.ID, "id_username"))
    member.find_element(By.ID, "id_username").send_keys("admin")
    member.find_element(By.ID, "id_password").send_keys(real_apps.django_password)
    member.find_element(By.CSS_SELECTOR, "#login-form [type=submit]").click()
    wait(member, lambda b: "Site administration" in b.find_element(By.TAG_NAME, "h1").text)
    member.get(admin + "auth/group/add/")
    name = "Editors " + uuid.uuid4().hex[:8]
    wait(member, lambda b: b.find_element(By.ID, "id_name")).send_keys(name)
    member.find_element(By.CSS_SELECTOR, "input[name=_save]").click()
    wait(member, lambda b: name in b.find_element(By.ID, "result_list").text)
    assert member.current_url.startswith(base(gw, "django", mount) + "admin/auth/group/")
    member.find_element(By.CSS_SELECTOR, "#logout-form [type=submit]").click()
    wait(member, lambda b: "Logged out" in b.find_element(By.TAG_NAME, "body").text)
    assert_clean_console(member, "django")


@pytest.mark.parametrize("mount", MOUNTS)
def test_prometheus_runs_a_query_and_opens_its_targets(member, gw, real_apps, mount):
    """Run `up`, see a row; open Status → Targets from the app's own fixed navigation bar."""
    member.get(base(gw, "prometheus", mount) + "graph")
    expression = wait(member, lambda b: b.find_element(By.CSS_SELECTOR, "textarea.expression_input"))
    expression.send_keys("up", Keys.ENTER)
    wait(member, lambda b: b.find_elements(By.XPATH, "//td[contains(., 'up{') and contains(., 'job=\"self\"')]"), timeout=30)
    expression.send_keys(Keys.ESCAPE)  # the expression's suggestions close
    # The navigation bar is fixed at the window's top: the gateway's bar goes elsewhere and the menu opens.
    wait(member, lambda b: gateway_bar_clear_of(b, ".navbar .dropdown-toggle"), timeout=10)
    member.find_element(By.XPATH, "//a[contains(@class,'dropdown-toggle') and contains(., 'Status')]").click()
    wait(member, lambda b: b.find_element(By.XPATH, "//a[contains(@class,'dropdown-item') and normalize-space()='Targets']").is_displayed())
    member.find_element(By.XPATH, "//a[contains(@class,'dropdown-item') and normalize-space()='Targets']").click()
    wait(member, lambda b: b.current_url.split("?")[0].endswith("/targets"))
    assert member.current_url.startswith(base(gw, "prometheus", mount))
    wait(member, lambda b: "self" in b.find_element(By.TAG_NAME, "body").text)
    assert_clean_console(member, "prometheus")


def test_a_registered_members_bar_keeps_the_apps_usable(gw, real_apps):
    """Olive, registered (the bar without the banner): Django's admin keeps its header below the bar at the top,
    Prometheus's fixed navigation bar stays clickable with the bar at the bottom, and the bar's own links work."""
    register_by_http(gw, "olive", "olive_apps")
    browser = signed_in_browser(gw, "olive")
    try:
        browser.get(base(gw, "django", "path") + "admin/login/")
        wait(browser, lambda b: b.find_element(By.ID, "id_username"))
        assert in_bar(browser, "#home").is_displayed() and not browser.find_elements(By.ID, "gatehouse-banner")
        assert browser.execute_script("return document.getElementById('gatehouse-bar').getAttribute('data-place')") == "auto"
        assert browser.find_element(By.ID, "header").rect["y"] >= 40 and gateway_bar_clear_of(browser, "#header")
        assert_clean_console(browser, "django")
        browser.get(base(gw, "prometheus", "path") + "graph")
        wait(browser, lambda b: b.execute_script("return document.getElementById('gatehouse-bar').getAttribute('data-place')") == "bottom")
        wait(browser, lambda b: gateway_bar_clear_of(b, ".navbar .dropdown-toggle"))
        assert in_bar(browser, "#home").is_displayed()
        in_bar(browser, "#web-apps").click()
        wait(browser, lambda b: b.current_url.rstrip("/") == gw.url)
        assert_clean_console(browser, "prometheus")
    finally:
        browser.quit()
