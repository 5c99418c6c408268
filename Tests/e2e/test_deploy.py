"""The files under deploy/: the Prometheus alert rules and the systemd unit."""

import json
import shutil
import subprocess

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
    assert "SUCCESS: 14 rules found" in checked.stdout
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
