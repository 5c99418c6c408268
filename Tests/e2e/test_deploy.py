"""The files under deploy/: the Prometheus alert rules and the systemd unit."""

import shutil
import subprocess

from conftest import BINARY, ROOT

DEPLOY = ROOT / "deploy"


def promtool():
    """Debian's promtool: on PATH, or unpacked from the prometheus package by scripts/setup --test."""
    found = shutil.which("promtool") or ROOT / ".build" / "tools" / "promtool"
    assert found and (shutil.which("promtool") or found.exists()), "promtool missing: run scripts/setup --test"
    return str(found)


def test_the_alert_rules_are_valid_and_fire_when_they_should():
    checked = subprocess.run([promtool(), "check", "rules", "gatehouse-alerts.yml"], cwd=DEPLOY / "prometheus", capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 9 rules found" in checked.stdout
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
