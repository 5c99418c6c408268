"""Backup, restore, upgrade and rollback as docs/operations.md tells an operator to do them: a serving gateway's
SQLite store is backed up with `gatehouse storage backup`, a store a newer Gatehouse migrated is refused with the
message naming both schema versions and the way back, and `gatehouse storage restore` puts the backup back so that
the members carry on signed in (session, app cookies, registration, catalog, audit trail). PostgreSQL's store goes
through the documented `pg_dump` and `pg_restore` and the member carries on the same way."""

import glob
import re
import shutil
import sqlite3
import subprocess
import threading

import requests

from conftest import BINARY
from test_replicas import sign_in_over_http
from test_upgrade_journey import register_by_http
from replicas import ReplicaSet  # noqa: E402 (test_replicas puts scripts/ on the path)

SLUG = "handbook"


def gatehouse(*arguments, config):
    return subprocess.run([str(BINARY), *arguments, "--config", str(config)], capture_output=True, text=True, timeout=120)


def table_rows(path):
    """Every row of every table but the readiness probe's, as the file holds them."""
    database = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [name for (name,) in database.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {table: sorted(map(repr, database.execute(f'SELECT * FROM "{table}"'))) for table in tables if table != "readiness"}
    finally:
        database.close()


def add_catalog_app(gw, operator, upstream):
    form = operator.get(gw.url + "/operator/catalog/new", timeout=10).text
    csrf = re.search(r'name="csrf" value="([^"]+)"', form).group(1)
    answer = operator.post(
        gw.url + "/operator/catalog/save",
        data={"csrf": csrf, "slug": SLUG, "name": "Handbook", "upstream": upstream, "enabled": "on", "action": "save_anyway"},
        headers={"Accept": "application/json"}, timeout=30)
    assert answer.status_code == 200, answer.text


def carries_on(gw, member, username):
    """The member is still signed in and registered, the app still has its own sign-in in the jar, and the console's app
    is on the portal."""
    portal = member.get(gw.url + "/", allow_redirects=False, timeout=10)
    assert portal.status_code == 200, portal.headers.get("Location")
    assert f'data-app="{SLUG}"' in portal.text
    assert username in member.get(gw.url + "/account", allow_redirects=False, timeout=10).text
    visits = member.get(gw.url + "/apps/visits/", timeout=10).text
    assert 'id="app-user">Olive<' in visits, visits[-500:]


def test_a_backup_of_a_serving_gateway_restores_after_a_rolled_back_upgrade(dev_gateway):
    gw = dev_gateway
    config = gw.command[gw.command.index("--config") + 1]
    data = gw.log_dir / "data"
    store = data / "gatehouse.sqlite"

    olive = register_by_http(gw, "olive", "olive.backup")
    assert olive.post(gw.url + "/apps/visits/login", data={"name": "Olive"}, allow_redirects=False, timeout=10).status_code == 303
    demo_apps = re.search(r'"demo_apps_port": (\d+)', (gw.log_dir / "gatehouse.json").read_text()).group(1)
    add_catalog_app(gw, olive, f"http://127.0.0.1:{demo_apps}/links/")
    carries_on(gw, olive, "olive.backup")

    # Backed up while members keep using it: every request writes (last-seen times, jars, events).
    backup = gw.log_dir / "backups" / "gatehouse-before-upgrade.sqlite"
    stop = threading.Event()

    def keep_busy():
        while not stop.is_set():
            olive.get(gw.url + "/apps/visits/", timeout=10)

    busy = threading.Thread(target=keep_busy)
    busy.start()
    try:
        made = gatehouse("storage", "backup", "--development", "--to", str(backup), config=config)
    finally:
        stop.set()
        busy.join()
    assert made.returncode == 0, made.stderr
    assert "sessions: 1 row(s)" in made.stdout and "registrations: 1 row(s)" in made.stdout and "apps: 1 row(s)" in made.stdout
    key_id = re.search(r"sealed values: \d+ by key ([0-9a-f]{8})\n", made.stdout).group(1)
    assert "values they do not open: 0" in made.stdout
    assert (backup.stat().st_mode & 0o777) == 0o600
    held = table_rows(backup)
    assert held["audit"], "the catalog change is in the audit trail"
    # A backup never overwrites one.
    again = gatehouse("storage", "backup", "--development", "--to", str(backup), config=config)
    assert again.returncode == 2 and "exists already" in again.stderr

    # The upgrade: a newer Gatehouse migrated the store one schema further. This one refuses it, naming both versions
    # and the way back, and leaves it as it is.
    gw.running.stop()
    database = sqlite3.connect(store)
    (known,) = database.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
    database.execute("INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)", (known + 1,))
    database.commit()
    database.close()
    refused = subprocess.run(gw.command, env=gw.env, capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0
    assert f"the store is at schema version {known + 1}" in refused.stderr + refused.stdout
    assert f"knows schema versions up to {known}" in refused.stderr + refused.stdout
    assert "gatehouse storage restore --from FILE" in refused.stderr + refused.stdout

    # Rolled back by restore: refused over the store still there, then put back once it is moved aside.
    over = gatehouse("storage", "restore", "--development", "--from", str(backup), config=config)
    assert over.returncode == 2 and "a store is already at" in over.stderr
    aside = gw.log_dir / "migrated"
    aside.mkdir()
    for path in glob.glob(str(store) + "*"):
        shutil.move(path, aside)
    restored = gatehouse("storage", "restore", "--development", "--from", str(backup), config=config)
    assert restored.returncode == 0, restored.stderr
    assert f"by key {key_id}" in restored.stdout
    assert table_rows(store) == held
    gw.restart()
    carries_on(gw, olive, "olive.backup")

    # With another key the backup does not open, and the restore says which key it needs.
    gw.running.stop()
    shutil.move(store, aside / "restored.sqlite")
    key = data / "storage.key"
    shutil.move(key, aside / "storage.key")
    other = gatehouse("storage", "restore", "--development", "--from", str(backup), config=config)
    assert other.returncode == 2 and "do not open" in other.stderr and key_id in other.stderr
    assert not store.exists()
    shutil.move(aside / "storage.key", key)


def postgres_tool(name):
    """PostgreSQL's own client program, of the server's version."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    assert found, f"{name} is not installed"
    return found[-1]


def test_postgres_store_goes_through_pg_dump_and_pg_restore(tmp_path):
    replicas = ReplicaSet(BINARY, count=1)
    replicas.start()
    try:
        cookie = sign_in_over_http(replicas)
        member = requests.Session()
        member.cookies.set("gatehouse_session", cookie)
        assert member.post(replicas.url + "/apps/visits/login", data={"name": "Ada"}, allow_redirects=False, timeout=10).status_code == 303

        dump = tmp_path / "gatehouse.dump"
        dumped = subprocess.run(
            [postgres_tool("pg_dump"), "--format=custom", f"--file={dump}", replicas.database_url], capture_output=True, text=True, timeout=120)
        assert dumped.returncode == 0, dumped.stderr

        # Every replica stopped, an empty database, the dump restored into it, the replica pointed at it.
        replicas.replicas[0].stop()
        created = subprocess.run(
            [postgres_tool("psql"), replicas.database_url, "-c", "CREATE DATABASE gatehouse_restored OWNER gatehouse"],
            capture_output=True, text=True, timeout=60)
        assert created.returncode == 0, created.stderr
        restored_url = replicas.database_url.replace("/postgres?", "/gatehouse_restored?")
        restored = subprocess.run(
            [postgres_tool("pg_restore"), "--no-owner", "--exit-on-error", f"--dbname={restored_url}", str(dump)],
            capture_output=True, text=True, timeout=120)
        assert restored.returncode == 0, restored.stderr
        # The old database emptied: whatever the replica serves now comes from the restored one.
        subprocess.run(
            [postgres_tool("psql"), replicas.database_url, "-c", "DELETE FROM cookie_jars; DELETE FROM sessions"],
            capture_output=True, text=True, timeout=60, check=True)
        replicas.database_url = restored_url
        replicas.replicas[0] = replicas.start_replica(0)

        portal = member.get(replicas.url + "/", allow_redirects=False, timeout=10)
        assert portal.status_code == 200, portal.headers.get("Location")
        assert 'id="app-user">Ada<' in member.get(replicas.url + "/apps/visits/", timeout=10).text
    finally:
        replicas.stop()
