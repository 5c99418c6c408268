"""`scripts/run --chat` as a newcomer runs it, with the tests' build (`GATEHOUSE_BIN`) and ports of its own, in a
copy of the scripts beside the gateway's files: what to do is printed last, after the gateway's own lines, and stopping
the script's process as a person would (Ctrl-C's SIGINT, or `kill`) stops the gateway, the homeserver and the TURN
server it started."""

import os
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

from conftest import BINARY, ROOT, free_port


def answers(port):
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def running(pid):
    """Whether the process runs (a zombie waiting for its parent to read its end does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def tree(tmp_path):
    """The repository's scripts (they find the tree by their own place) and the gateway's files, copied."""
    work = tmp_path / "gatehouse"
    work.mkdir()
    for name in ("scripts", "Templates", "Public", "Strings"):
        shutil.copytree(ROOT / name, work / name)
    return work


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_stopping_scripts_run_stops_everything_it_started(tmp_path, stop):
    work = tree(tmp_path)
    port, synapse_port, turn_port = free_port(), free_port(), free_port()
    env = dict(os.environ, GATEHOUSE_BIN=str(BINARY), GATEHOUSE_RUN_PORT=str(port), GATEHOUSE_RUN_SYNAPSE_PORT=str(synapse_port),
               GATEHOUSE_RUN_TURN_PORT=str(turn_port), GATEHOUSE_SYNAPSE_VENV=str(ROOT / ".venv-synapse"))
    output = tmp_path / "run.out"
    with open(output, "w") as out:
        script = subprocess.Popen(["bash", str(work / "scripts" / "run"), "--chat"], cwd=work, env=env, stdout=out,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while "Stop with Ctrl-C" not in output.read_text() and time.monotonic() < deadline:
            assert script.poll() is None, output.read_text()[-3000:]
            time.sleep(0.5)
        text = output.read_text()
        assert "Stop with Ctrl-C" in text, text[-3000:]
        # What to do is last: after the gateway's own lines with the members' password.
        assert text.index("password for all of them") < text.index("Chats: alice and bob have chat accounts")
        # Nothing a newcomer cannot act on: the demo apps are the gateway's own.
        assert "not equally trusted" not in text and not re.search(r"^\S+ (warning|error|critical) ", text, re.MULTILINE), text
        assert answers(port) and answers(synapse_port)
        turn_pid = int((work / "data" / "coturn" / "turn.pid").read_text())

        # As a person stops it: a signal to the script's own process, nothing else.
        os.kill(script.pid, stop)
        assert script.wait(timeout=60) != 0 or stop == signal.SIGTERM
        deadline = time.monotonic() + 20
        while (answers(port) or answers(synapse_port) or running(turn_pid)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not answers(port), "the gateway still serves"
        assert not answers(synapse_port), "the homeserver still serves"
        assert not running(turn_pid), "the TURN server still runs"
    finally:
        if script.poll() is None:
            script.kill()
        subprocess.run(["bash", str(work / "scripts" / "synapse"), "stop", str(work / "data" / "synapse")], check=False, env=env)
        subprocess.run(["bash", str(work / "scripts" / "coturn"), "stop", str(work / "data" / "coturn")], check=False)
