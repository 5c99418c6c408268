"""Real third-party apps behind Gatehouse, as a member uses them, in headless Chromium: JupyterLab, Django's admin and a
marimo notebook (PyPI), Prometheus's web UI and Syncthing's (Debian), a site Turbolinks (Debian) navigates. Each on an
app host, on a path mount with the prefix set in the app (where the app can be told one), and on a path mount
without, with no per-app settings: each journey asserts what the member sees and that the bar is there and works,
with the browser's console free of policy refusals and failed loads (beyond the few each app has when opened
directly, named below)."""

import json
import time
import uuid
from pathlib import Path

import pytest
import requests
from selenium.webdriver import ActionChains
from selenium.common.exceptions import ElementNotInteractableException
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
    "syncthing": ["rest/system/upgrade"],  # Debian's build has no upgrades: the GUI's check answers 503
    "marimo": [],
    "turbo": ["favicon.ico"],  # Python's file server has no icon
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


def bar_works(browser):
    """The gateway's bar is on the page and answers: its switcher opens and lists the apps (the bar opened from its
    handle first when it folded itself away from the app's own fixed controls)."""
    def switcher_opened(b):
        # The bar may fold itself while the app is still laying out (its fixed controls appear late): open it again.
        try:
            if b.execute_script("return document.getElementById('gatehouse-bar').hasAttribute('data-collapsed')"):
                in_bar(b, "#handle").click()
            in_bar(b, "#switcher-button").click()
            return True
        except ElementNotInteractableException:
            return False

    wait(browser, switcher_opened)
    wait(browser, lambda b: in_bar(b, "#switcher-menu").is_displayed())
    assert browser.execute_script("return document.getElementById('gatehouse-bar').shadowRoot.querySelectorAll('.apps a').length") > 3
    in_bar(browser, "#switcher-button").click()


@pytest.mark.parametrize("mount", ["host", "path"])
def test_syncthing_adds_a_folder(member, gw, real_apps, mount, tmp_path):
    """Syncthing's GUI (it serves at its root only): its AngularJS directives' templates, fetched by its scripts, come
    through byte for byte (a padding or a bar in them would leave a directive with two roots, and the GUI would not
    start); its `X-CSRF-Token-<id>` header, read from the `CSRF-Token-<id>` cookie copied to the browser, reaches it;
    a folder added in its dialog is in its configuration."""
    member.get(base(gw, "syncthing", mount))
    wait(member, lambda b: "This Device" in b.find_element(By.TAG_NAME, "body").text, timeout=30)
    template = "modal.html"  # the template of its modal directive (`replace: true`: exactly one root element)
    fetched = member.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0], {headers: {'Accept': 'text/html'}}).then(r => r.text()).then(done, e => done('failed: ' + e));",
        base(gw, "syncthing", mount) + template)
    assert fetched == requests.get(real_apps.upstreams["syncthing"] + template, timeout=10).text
    folder = tmp_path / "shared"
    label = "Shared " + uuid.uuid4().hex[:6]
    member.find_element(By.CSS_SELECTOR, "button[ng-click*='addFolder']").click()
    wait(member, lambda b: b.find_element(By.ID, "folderLabel").is_displayed(), timeout=10)
    member.find_element(By.ID, "folderLabel").send_keys(label)
    path_field = member.find_element(By.ID, "folderPath")
    path_field.clear()
    path_field.send_keys(str(folder))
    member.find_element(By.CSS_SELECTOR, "#editFolder .modal-footer .btn-primary").click()
    wait(member, lambda b: label in b.find_element(By.ID, "folders").text, timeout=30)
    # Saved by the app: its configuration, asked directly, has the folder.
    def saved(_):
        config = requests.get(real_apps.upstreams["syncthing"] + "rest/config/folders", timeout=10,
                              headers={"X-API-Key": real_apps.syncthing_api_key})
        return any(entry["label"] == label for entry in config.json())

    wait(member, saved, timeout=30)
    bar_works(member)
    assert_clean_console(member, "syncthing")


@pytest.mark.parametrize("mount", MOUNTS)
def test_marimo_runs_its_notebook_with_its_manifest(member, gw, real_apps, mount):
    """A marimo app: its cells run in its kernel over a WebSocket, a slider's new value is computed again; the web app
    manifest its page links is fetched with the member's session (the gateway adds `crossorigin="use-credentials"`:
    browsers send no cookies for manifests otherwise, and the gateway serves nothing of an app's without them)."""
    member.get(base(gw, "marimo", mount))
    wait(member, lambda b: "The answer is 42" in b.find_element(By.TAG_NAME, "body").text, timeout=60)
    manifest = member.find_element(By.CSS_SELECTOR, "link[rel=manifest]")
    assert manifest.get_attribute("crossorigin") == "use-credentials"
    name = member.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0], {credentials: 'include'}).then(r => r.json()).then(m => done(m.name), e => done('failed: ' + e));",
        manifest.get_attribute("href"))
    assert name == "A Marimo App"
    slider = member.find_element(By.CSS_SELECTOR, "marimo-slider").shadow_root.find_element(By.CSS_SELECTOR, "[role=slider]")
    slider.click()
    slider.send_keys(Keys.END)
    wait(member, lambda b: "The answer is 70" in b.find_element(By.TAG_NAME, "body").text, timeout=30)
    bar_works(member)
    assert_clean_console(member, "marimo")


@pytest.mark.parametrize("mount", ["host", "path"])
def test_a_site_that_replaces_its_body_keeps_the_bar(member, gw, real_apps, mount):
    """Turbolinks moves between pages by fetching the next one and putting its `<body>` in place of the document's:
    the bar, kept outside `<body>`, is the same element after the visit, with its state, and still works; the page
    fetched by the script comes through without a bar of its own."""
    member.get(base(gw, "turbo", mount))
    wait(member, lambda b: b.find_element(By.ID, "title").text == "First page")
    member.execute_script("document.getElementById('gatehouse-bar').setAttribute('data-visit-marker', 'kept')")
    in_bar(member, "#gatehouse-banner-dismiss").click()
    wait(member, lambda b: b.execute_script("return document.getElementById('gatehouse-bar').hasAttribute('data-banner-dismissed')"))
    member.find_element(By.ID, "next").click()
    wait(member, lambda b: b.find_element(By.ID, "title").text == "Second page")
    assert member.current_url == base(gw, "turbo", mount) + "second.html"
    # A visit, not a page load: the document is the same, its body a new one.
    assert member.execute_script("return document.getElementById('gatehouse-bar').getAttribute('data-visit-marker')") == "kept"
    assert member.execute_script("return document.querySelectorAll('gatehouse-bar').length") == 1
    assert member.execute_script("return document.getElementById('gatehouse-bar').hasAttribute('data-banner-dismissed')")
    assert in_bar(member, "#home").is_displayed()
    # Even a script that rewrites the whole document element finds the bar put back at once.
    member.execute_script("document.documentElement.innerHTML = '<head></head><body><p id=new>replaced</p></body>'")
    wait(member, lambda b: b.execute_script(
        "const h = document.getElementById('gatehouse-bar'); return !!h && h.getAttribute('data-visit-marker') === 'kept' && !!h.shadowRoot"))
    bar_works(member)
    in_bar(member, "#web-apps").click()
    wait(member, lambda b: b.current_url.rstrip("/") == gw.url)
    assert_clean_console(member, "turbo")
