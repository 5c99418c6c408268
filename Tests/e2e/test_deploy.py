"""The files under deploy/: the Prometheus alert rules and the systemd unit."""

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import requests

from conftest import BINARY, ROOT, Running, free_port, wait_for

DEPLOY = ROOT / "deploy"


def promtool():
    """Debian's promtool, from the prometheus package that scripts/setup --test installs."""
    found = shutil.which("promtool")
    assert found, "promtool missing: run scripts/setup --test"
    return str(found)


def test_the_alert_rules_are_valid_and_fire_when_they_should():
    checked = subprocess.run([promtool(), "check", "rules", "gatehouse-alerts.yml"], cwd=DEPLOY / "prometheus", capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    rules = (DEPLOY / "prometheus" / "gatehouse-alerts.yml").read_text()
    alerts = re.findall(r"- alert: (\w+)", rules)
    # Every alert of the file loaded (none lost to a misplaced indent).
    assert len(alerts) >= 15 and f"SUCCESS: {len(alerts)} rules found" in checked.stdout
    tested = subprocess.run([promtool(), "test", "rules", "gatehouse-alerts.test.yml"], cwd=DEPLOY / "prometheus", capture_output=True, text=True)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_the_systemd_unit_verifies(tmp_path):
    # The unit names the installed binary; verified here with the built one in its place.
    unit = (DEPLOY / "gatehouse.service").read_text().replace("/usr/local/bin/gatehouse", str(BINARY))
    path = tmp_path / "gatehouse.service"
    path.write_text(unit)
    verified = subprocess.run(["systemd-analyze", "verify", "--man=no", str(path)], capture_output=True, text=True)
    problems = [line for line in verified.stderr.splitlines() if "gatehouse.service" in line]
    assert verified.returncode == 0 and not problems, verified.stderr


def unit_capabilities(unit):
    """The capabilities the unit's `AmbientCapabilities=` and `CapabilityBoundingSet=` leave the gateway, read as
    systemd reads them: lines of one setting add up, and an empty assignment empties it. `None`: not set (systemd's
    default: no ambient capabilities, a bounding set of all)."""
    sets = {"AmbientCapabilities": None, "CapabilityBoundingSet": None}
    for line in unit.splitlines():
        name, _, value = line.partition("=")
        if name in sets:
            names = {word.lower().removeprefix("cap_") for word in value.split()}
            sets[name] = set() if not names else (sets[name] or set()) | names
    return sets["AmbientCapabilities"] or set(), sets["CapabilityBoundingSet"]


def free_low_port():
    for port in range(900, 1000):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError("no free port below 1024")


def test_the_units_capabilities_let_a_non_root_user_serve_a_port_below_1024():
    """The gateway, started as an unprivileged user with exactly the capabilities the unit gives it (`setpriv`, as
    systemd would), binds a port below 1024 and answers there; without them the same start is refused. Its database
    and folder are created owner-only under the unit's `UMask=`."""
    unit = (DEPLOY / "gatehouse.service").read_text()
    ambient, bounding = unit_capabilities(unit)
    assert ambient == {"net_bind_service"} and bounding == {"net_bind_service"}, (ambient, bounding)
    assert "UMask=0077" in unit.splitlines()
    if os.geteuid() != 0:
        raise AssertionError("this test starts the gateway as another user: run it as root (CI does)")
    # Everything the unprivileged user runs and reads, where it may read it.
    folder = Path(tempfile.mkdtemp(prefix="gatehouse-unit-", dir="/tmp"))
    os.chmod(folder, 0o755)
    shutil.copy2(BINARY, folder / "gatehouse")
    for shipped in ("Templates", "Public", "Strings"):
        shutil.copytree(ROOT / shipped, folder / shipped)
    data = folder / "data"
    data.mkdir()
    os.chown(data, 65534, 65534)
    port = free_low_port()
    config = folder / "gatehouse.json"
    config.write_text(json.dumps({
        "public_url": f"http://127.0.0.1:{port}", "metrics": {"port": free_port()}, "development": {"demo_apps_port": free_port()},
        "directories": {"data": str(data)},
    }))
    os.chmod(config, 0o644)

    def start(capabilities):
        caps = ",".join(f"+{name}" for name in sorted(capabilities))
        grant = [f"--inh-caps={caps}", f"--ambient-caps={caps}"] if capabilities else []
        bounding_set = "-all" + "".join(f",+{name}" for name in sorted(bounding or []))
        command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *grant, f"--bounding-set={bounding_set}",
                   "sh", "-c", "umask 0077 && exec ./gatehouse dev --config gatehouse.json"]
        return Running(command, folder / f"gatehouse-{len(capabilities)}.log", cwd=folder)

    refused = start(set())
    try:
        refused.process.wait(timeout=60)
        assert refused.process.returncode != 0 and "ermission denied" in refused.output(), refused.output()[-2000:]
    finally:
        refused.stop()
    running = start(ambient)
    try:
        wait_for(f"http://127.0.0.1:{port}/healthz", process=running.process)
        assert requests.get(f"http://127.0.0.1:{port}/readyz", timeout=10).status_code == 200
        assert (data / "gatehouse.sqlite").stat().st_mode & 0o777 == 0o600
        assert (data / "storage.key").stat().st_mode & 0o777 == 0o600
        assert (data / "gatehouse.sqlite").stat().st_uid == 65534
    finally:
        running.stop()
        shutil.rmtree(folder, ignore_errors=True)


def test_the_binary_runs_from_any_folder(tmp_path):
    """No directories configured and a working folder without Templates/Public/Strings: the binary finds the ones it
    ships with (here: its checkout's), pages render and readiness says so."""
    port = free_port()
    config = tmp_path / "gatehouse.json"
    config.write_text(json.dumps({
        "public_url": f"http://127.0.0.1:{port}", "metrics": {"port": free_port()},
        "development": {"demo_apps_port": free_port()}, "storage": {"sqlite_path": str(tmp_path / "g.sqlite")},
    }))
    running = Running([str(BINARY), "dev", "--config", str(config)], tmp_path / "gatehouse.log", cwd=tmp_path)
    try:
        wait_for(f"http://127.0.0.1:{port}/healthz", process=running.process)
        page = requests.get(f"http://127.0.0.1:{port}/signin", timeout=10)
        assert page.status_code == 200 and "<h1" in page.text and "Sign In" in page.text
        assert requests.get(f"http://127.0.0.1:{port}/static/gatehouse-bar.js", timeout=10).status_code == 200
        assert requests.get(f"http://127.0.0.1:{port}/readyz", timeout=10).status_code == 200
    finally:
        running.stop()


def test_missing_shipped_folders_refuse_to_start(tmp_path):
    config = tmp_path / "gatehouse.json"
    config.write_text(json.dumps({"development": {"enabled": True}, "directories": {"templates": str(tmp_path / "nowhere")}}))
    result = subprocess.run([str(BINARY), "check-config", "--config", str(config)], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode != 0 and "directories.templates" in result.stdout, result.stdout
