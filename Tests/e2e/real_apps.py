"""Real third-party apps on loopback, as an operator would put them behind Gatehouse: JupyterLab, Django and marimo from
PyPI, Prometheus and Syncthing from Debian, and a site navigated by Debian's Turbolinks. Each is started at its root
(for an app host and for a path mount the app is not told about) and, where it can be, once more told the mount's
prefix (`/apps/<slug>-told/`). Small fixed data, everything under one folder.

By hand: `python3 Tests/e2e/real_apps.py` starts them and a development gateway in front, and prints the URLs.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from replicas import Process, free_port  # noqa: E402

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
SYNCTHING = shutil.which("syncthing") or "/usr/bin/syncthing"
TURBOLINKS = Path("/usr/share/nodejs/turbolinks/dist/turbolinks.js")


def wait_until_answers(url, process, timeout=90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process.running():
            raise RuntimeError(f"{process.name} exited before {url} answered:\n{process.output()[-3000:]}")
        try:
            if requests.get(url, timeout=2, allow_redirects=False).status_code < 500:
                return
        except requests.RequestException:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{url} did not answer within {timeout} s:\n{process.output()[-3000:]}")


def start_jupyter(work, prefix):
    """JupyterLab with its own authentication off (the gateway is in front), notebooks in a folder of its own."""
    port = free_port()
    name = "jupyter" + ("-told" if prefix != "/" else "")
    notebooks = work / f"{name}-notebooks"
    notebooks.mkdir()
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(work / f"{name}-config"), JUPYTER_DATA_DIR=str(work / f"{name}-data"),
               JUPYTER_RUNTIME_DIR=str(work / f"{name}-runtime"), IPYTHONDIR=str(work / f"{name}-ipython"))
    args = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}", f"--ServerApp.base_url={prefix}",
        f"--ServerApp.root_dir={notebooks}", "--IdentityProvider.token=", "--ServerApp.password=", "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--ServerApp.allow_root=True",
        "--LabServerApp.extra_labextensions_path=[]", "--ServerApp.terminals_enabled=False",
    ]
    process = Process(args, work / f"{name}.log", env=env, cwd=notebooks)
    wait_until_answers(f"http://127.0.0.1:{port}{prefix}api/status", process)
    return process, f"http://127.0.0.1:{port}{prefix}", notebooks


DJANGO_SETTINGS = """
from pathlib import Path
import os
BASE_DIR = Path(__file__).resolve().parent.parent
PREFIX = os.environ.get("APP_PREFIX", "")
SECRET_KEY = "test-only-not-secret"
DEBUG = True
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = ["django.contrib.admin", "django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions",
                  "django.contrib.messages", "django.contrib.staticfiles"]
MIDDLEWARE = ["django.middleware.security.SecurityMiddleware", "django.contrib.sessions.middleware.SessionMiddleware",
              "django.middleware.common.CommonMiddleware", "django.middleware.csrf.CsrfViewMiddleware",
              "django.contrib.auth.middleware.AuthenticationMiddleware", "django.contrib.messages.middleware.MessageMiddleware",
              "django.middleware.clickjacking.XFrameOptionsMiddleware"]
ROOT_URLCONF = "site_urls"
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates", "DIRS": [], "APP_DIRS": True,
              "OPTIONS": {"context_processors": ["django.template.context_processors.request", "django.contrib.auth.context_processors.auth",
                                                 "django.contrib.messages.context_processors.messages"]}}]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": BASE_DIR / "db.sqlite3"}}
STATIC_URL = "/" + PREFIX + "static/"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
"""

DJANGO_URLS = """
import os
from django.contrib import admin
from django.urls import path
urlpatterns = [path(os.environ.get("APP_PREFIX", "") + "admin/", admin.site.urls)]
"""


def start_django(work, prefix, password):
    """Django's admin site on SQLite, with a superuser `admin`; told its prefix through its URLs (`APP_PREFIX`)."""
    name = "django" + ("-told" if prefix != "/" else "")
    project = work / name
    (project / "site_settings").mkdir(parents=True)
    (project / "site_settings" / "__init__.py").write_text("")
    (project / "site_settings" / "settings.py").write_text(DJANGO_SETTINGS)
    (project / "site_urls.py").write_text(DJANGO_URLS)
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="site_settings.settings", APP_PREFIX=prefix.lstrip("/"), PYTHONPATH=str(project),
               DJANGO_SUPERUSER_PASSWORD=password)
    manage = [sys.executable, "-m", "django"]
    for command in (["migrate", "--noinput"], ["createsuperuser", "--noinput", "--username", "admin", "--email", "admin@example.org"]):
        subprocess.run(manage + command, cwd=project, env=env, check=True, capture_output=True)
    port = free_port()
    process = Process(manage + ["runserver", "--noreload", f"127.0.0.1:{port}"], work / f"{name}.log", env=env, cwd=project)
    wait_until_answers(f"http://127.0.0.1:{port}{prefix}admin/login/", process)
    return process, f"http://127.0.0.1:{port}{prefix}"


def start_prometheus(work, prefix):
    """Prometheus scraping itself, its classic web UI (Debian's build) at its root or at the mount's prefix."""
    name = "prometheus" + ("-told" if prefix != "/" else "")
    port = free_port()
    folder = work / name
    folder.mkdir()
    (folder / "prometheus.yml").write_text(
        f"global: {{scrape_interval: 1s}}\n"
        f"scrape_configs:\n  - job_name: self\n    metrics_path: {prefix}metrics\n    static_configs: [{{targets: ['127.0.0.1:{port}']}}]\n")
    args = [PROMETHEUS, f"--config.file={folder / 'prometheus.yml'}", f"--storage.tsdb.path={folder / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}", "--web.console.templates=/etc/prometheus/consoles",
            "--web.console.libraries=/etc/prometheus/console_libraries"]
    if prefix != "/":
        args += [f"--web.route-prefix={prefix}", f"--web.external-url=http://127.0.0.1:{port}{prefix}"]
    process = Process(args, work / f"{name}.log", cwd=folder)
    wait_until_answers(f"http://127.0.0.1:{port}{prefix}-/ready", process)
    return process, f"http://127.0.0.1:{port}{prefix}"


def start_syncthing(work):
    """Syncthing's web GUI (Debian's build: AngularJS, its directives' templates fetched by its scripts, every call with
    `X-CSRF-Token-<id>` read from the cookie `CSRF-Token-<id>`), with nothing of the network on: no discovery, relays,
    NAT, usage or crash reports. It serves at its root only (no prefix to be told)."""
    home = work / "syncthing"
    subprocess.run([SYNCTHING, "generate", f"--home={home}", "--no-default-folder"], check=True, capture_output=True)
    config = (home / "config.xml").read_text()
    for name, value in [("globalAnnounceEnabled", "false"), ("localAnnounceEnabled", "false"), ("relaysEnabled", "false"),
                        ("natEnabled", "false"), ("urAccepted", "-1"), ("startBrowser", "false"), ("autoUpgradeIntervalH", "0"),
                        ("crashReportingEnabled", "false"), ("listenAddress", f"tcp://127.0.0.1:{free_port()}")]:
        config = re.sub(f"<{name}>[^<]*</{name}>", f"<{name}>{value}</{name}>", config)
    (home / "config.xml").write_text(config)
    port = free_port()
    env = dict(os.environ, STNOUPGRADE="1", STNODEFAULTFOLDER="1")
    process = Process([SYNCTHING, "serve", f"--home={home}", "--no-browser", "--no-restart", f"--gui-address=http://127.0.0.1:{port}"],
                      work / "syncthing.log", env=env, cwd=work)
    wait_until_answers(f"http://127.0.0.1:{port}/rest/noauth/health", process)
    api_key = re.search(r"<apikey>([^<]+)</apikey>", config).group(1)
    return process, f"http://127.0.0.1:{port}/", api_key


MARIMO_NOTEBOOK = """
import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo
    return (mo,)


@app.cell
def _(mo):
    factor = mo.ui.slider(1, 10, value=6, label="Factor")
    factor
    return (factor,)


@app.cell
def _(factor, mo):
    mo.md(f"The answer is {factor.value * 7}")
    return


if __name__ == "__main__":
    app.run()
"""


def start_marimo(work, prefix):
    """A marimo notebook served as an app (`marimo run`: React, its kernel over a WebSocket, a web app manifest the
    page links), its own token off (the gateway is in front); told the mount's prefix with `--base-url`."""
    name = "marimo" + ("-told" if prefix != "/" else "")
    folder = work / name
    folder.mkdir()
    (folder / "answer.py").write_text(MARIMO_NOTEBOOK)
    port = free_port()
    args = [sys.executable, "-m", "marimo", "run", str(folder / "answer.py"), "--host", "127.0.0.1", "--port", str(port), "--headless",
            "--no-token", "--no-sandbox", "--no-check"]
    if prefix != "/":
        args += ["--base-url", prefix.rstrip("/")]
    env = dict(os.environ, MARIMO_SKIP_UPDATE_CHECK="1", HOME=str(folder))
    process = Process(args, work / f"{name}.log", env=env, cwd=folder)
    wait_until_answers(f"http://127.0.0.1:{port}{prefix}health", process)
    return process, f"http://127.0.0.1:{port}{prefix}"


TURBO_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<script src="turbolinks.js"></script></head>
<body><main><h1 id="title">{title}</h1><p>{text}</p><nav><a id="next" href="{next}">{next_label}</a></nav></main></body></html>
"""


def start_turbolinks_site(work):
    """Two pages navigated by Turbolinks (Debian's `node-turbolinks`): each visit fetches the next page with a script
    and puts its `<body>` in place of the document's, the way Rails sites move between pages. Served by Python's
    `http.server`, at its root (relative links: any mount)."""
    folder = work / "turbo"
    folder.mkdir()
    shutil.copy(TURBOLINKS, folder / "turbolinks.js")
    (folder / "index.html").write_text(TURBO_PAGE.format(title="First page", text="Where the visit starts.", next="second.html",
                                                          next_label="Second page"))
    (folder / "second.html").write_text(TURBO_PAGE.format(title="Second page", text="Drawn by Turbolinks in place of the first.",
                                                           next="index.html", next_label="First page"))
    port = free_port()
    process = Process([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(folder)],
                      work / "turbo.log", cwd=folder)
    wait_until_answers(f"http://127.0.0.1:{port}/", process)
    return process, f"http://127.0.0.1:{port}/"


class RealApps:
    """Every app started, and the gateway's `apps` entries for them: `<app>-host` on an app host, `<app>-told` on a
    path mount the app was told, `<app>` on a path mount it was not."""

    def __init__(self, work):
        self.work = Path(work)
        self.work.mkdir(parents=True, exist_ok=True)
        self.processes = []
        self.django_password = "Dj4ngo-admin-pass"
        self.upstreams = {}
        try:
            jupyter, self.upstreams["jupyter"], self.notebooks = start_jupyter(self.work, "/")
            jupyter_told, self.upstreams["jupyter-told"], self.told_notebooks = start_jupyter(self.work, "/apps/jupyter-told/")
            django, self.upstreams["django"] = start_django(self.work, "/", self.django_password)
            django_told, self.upstreams["django-told"] = start_django(self.work, "/apps/django-told/", self.django_password)
            prometheus, self.upstreams["prometheus"] = start_prometheus(self.work, "/")
            prometheus_told, self.upstreams["prometheus-told"] = start_prometheus(self.work, "/apps/prometheus-told/")
            self.processes = [jupyter, jupyter_told, django, django_told, prometheus, prometheus_told]
            syncthing, self.upstreams["syncthing"], self.syncthing_api_key = start_syncthing(self.work)
            self.processes.append(syncthing)
            marimo, self.upstreams["marimo"] = start_marimo(self.work, "/")
            self.processes.append(marimo)
            marimo_told, self.upstreams["marimo-told"] = start_marimo(self.work, "/apps/marimo-told/")
            self.processes.append(marimo_told)
            turbo, self.upstreams["turbo"] = start_turbolinks_site(self.work)
            self.processes.append(turbo)
        except BaseException:
            self.stop()
            raise

    def catalog(self):
        """The gateway's `apps`, with no per-app settings (JupyterLab's `_xsrf` cookie is copied by default)."""
        apps = []
        for app in ["jupyter", "django", "prometheus", "syncthing", "marimo", "turbo"]:
            mounts = [(f"{app}-host", self.upstreams[app], "host"), (app, self.upstreams[app], "path")]
            if f"{app}-told" in self.upstreams:
                mounts.insert(1, (f"{app}-told", self.upstreams[f"{app}-told"], "path"))
            for slug, upstream, mount in mounts:
                apps.append({"slug": slug, "name": slug.replace("-", " ").title(), "upstream": upstream, "mount": mount})
        return apps

    def stop(self):
        for process in self.processes:
            process.stop()


if __name__ == "__main__":
    work = Path(sys.argv[1] if len(sys.argv) > 1 else Path(tempfile.gettempdir()) / "gatehouse-real-apps")
    shutil.rmtree(work, ignore_errors=True)
    apps = RealApps(work)
    port = int(os.environ.get("PORT", "8080"))
    config = work / "gatehouse.json"
    config.write_text(json.dumps({"public_url": f"http://127.0.0.1:{port}", "listen": {"port": port}, "apps": apps.catalog(),
                                  "storage": {"sqlite_path": str(work / "gatehouse.sqlite")}}, indent=2))
    binary = os.environ.get("GATEHOUSE_BIN", str(ROOT / ".build" / "debug" / "gatehouse"))
    print(f"apps: {json.dumps(apps.upstreams, indent=2)}\ngateway: http://127.0.0.1:{port}/ (config {config})", flush=True)
    try:
        subprocess.run([binary, "dev", "--config", str(config)], cwd=ROOT)
    finally:
        apps.stop()
