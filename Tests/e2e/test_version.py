"""Which build runs, from outside: `gatehouse --version` names the version, the commit the binary was built from
and the day; the start's log line, `/healthz` (asked for JSON) and `CHANGELOG.md` agree with it."""

import re
import subprocess

import requests

from conftest import BINARY, ROOT


def test_the_binary_and_the_running_gateway_say_which_build_they_are(dev_gateway):
    said = subprocess.run([str(BINARY), "--version"], capture_output=True, text=True, check=True).stdout.strip()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    match = re.fullmatch(r"gatehouse (\d+\.\d+\.\d+) \(commit ([0-9a-f]{12}(?:-dirty)?), built (\d{4}-\d{2}-\d{2})\)", said)
    assert match, said
    version, built_from, day = match.groups()
    assert built_from.removesuffix("-dirty") == commit
    assert f"## {version} " in (ROOT / "CHANGELOG.md").read_text()

    health = requests.get(dev_gateway.url + "/healthz", headers={"Accept": "application/json"}, timeout=10).json()
    assert health == {"status": "ok", "version": version, "commit": built_from, "built": day}
    assert requests.get(dev_gateway.url + "/healthz", timeout=10).text == "ok\n"
    started = [line for line in dev_gateway.log().splitlines() if "configuration loaded" in line]
    assert started and f"commit={built_from}" in started[0] and f"version={version}" in started[0], started
    metrics = dev_gateway.metrics()
    assert metrics.get(f'gatehouse_build_info{{version="{version}",commit="{built_from}",built="{day}"}}') == 1, metrics
