"""Where a Gatehouse process's CPU goes, phase by phase of a proxied page, from a `perf record -g` profile.

Each sample's stack is read from the leaf to the root; the first frame that names a phase of the data plane claims
the sample (so a phase's share is its own work, not what it calls that another phase names), and a sample whose leaf
is in the kernel counts as the kernel's. bench/peers.py profiles the member at `sso` with it and prints the table
beside nginx's CPU per page; `python3 bench/phases.py perf.data` prints it for any profile.
"""

import collections
import subprocess
import sys
from pathlib import Path

# (how a frame's symbol starts, or a piece of it, and the phase it names), tried in order for each frame. Symbols of
# Gatehouse's own types are matched by how they start (a method's mangled name begins with its type's), so that a
# type named only in another's signature does not claim the frame.
MARKERS = [
    ("$s9Gatehouse21HTMLResponseTransform", "rest: the body's transform"),
    ("$s13GatehouseCore18HTMLStreamRewriter", "rest: the body's transform"),
    ("$s9Gatehouse14ProxiedRequestC20startAfterFirstChunk", "first chunk: the bar"),
    ("$s9Gatehouse14ProxiedRequestC5start", "answer head: mapping"),
    ("$s9Gatehouse14ProxiedRequestC8finished", "rest: log and metrics"),
    ("$s18GatehouseDataPlane11ExchangeRunC9writeHead", "answer head: writing"),
    ("$s18GatehouseDataPlane19HTTP1ResponseWriter", "answer head: writing"),
    ("HTTPResponseEncoder", "answer head: writing"),
    ("$s9Gatehouse14ProxyDataPlaneC5route", "routing decision"),
    ("$s9Gatehouse13CurrentRoutes", "routing decision"),
    ("$s18GatehouseDataPlane11ExchangeRunC11sendRequest", "upstream head"),
    ("$s18GatehouseDataPlane19UpstreamRequestHead", "upstream head"),
    ("$s18GatehouseDataPlane23UpstreamResponseDecoder", "rest: the app's answer read"),
    ("$s18GatehouseDataPlane18HTTP1RequestReader", "reader"),
    ("$s18GatehouseDataPlane11RequestHeadV", "reader"),
    ("HTTPDecoder", "reader"),  # NIO's parser: the member's request, unless the app's answer decoder is below
    ("$s9Gatehouse19RequestFramingGuard", "reader"),
    ("$s18GatehouseDataPlane16DataPlaneHandler", "reader"),
    ("$s18GatehouseDataPlane11ExchangeRun", "rest: the exchange"),
    ("$s18GatehouseDataPlane25UpstreamConnectionHandler", "rest: the exchange"),
    ("flush", "rest: writes"),
    ("readFromSocket", "rest: reads"),
    ("swift_task", "tasks"),
]
ORDER = ["reader", "routing decision", "upstream head", "answer head: mapping", "answer head: writing", "first chunk: the bar",
         "rest: the app's answer read", "rest: the body's transform", "rest: the exchange", "rest: writes", "rest: reads",
         "rest: log and metrics", "tasks", "other", "kernel"]


def phase(frames):
    if frames and frames[0][0].startswith("ffffffff"):
        return "kernel"
    for _, symbol in frames:
        for marker, name in MARKERS:
            if symbol.startswith(marker) if marker.startswith("$s") else marker in symbol:
                if marker == "HTTPDecoder" and any("UpstreamResponseDecoder" in other for _, other in frames):
                    return "rest: the app's answer read"
                return name
    return "other"


def shares(perf_data):
    """Each phase's share of the profile's samples, in ORDER."""
    script = subprocess.run(["perf", "script", "-i", str(perf_data), "-F", "ip,sym"], capture_output=True, text=True).stdout
    counts = collections.Counter()
    frames = []
    for line in script.splitlines() + [""]:
        if not line.strip():
            if frames:
                counts[phase(frames)] += 1
            frames = []
            continue
        parts = line.strip().split(" ", 1)
        frames.append((parts[0], parts[1] if len(parts) > 1 else ""))
    total = sum(counts.values()) or 1
    return [(name, counts[name] / total) for name in ORDER if counts[name]]


def table(perf_data, cpu_per_page=None, nginx_per_page=None):
    """The phases as a Markdown table: share, and µs per page when the page's CPU is known."""
    if not Path(perf_data).exists():
        return "(no profile: perf could not record here; /proc/sys/kernel/perf_event_paranoid may forbid it)"
    lines = ["| phase | share | CPU per page |", "|---|---:|---:|"]
    for name, share in shares(perf_data):
        micro = f"{share * cpu_per_page:.0f} µs" if cpu_per_page else ""
        lines.append(f"| {name} | {share:.1%} | {micro} |")
    if cpu_per_page:
        lines.append(f"| **Gatehouse, all** | 100 % | **{cpu_per_page:.0f} µs** |")
    if nginx_per_page:
        lines.append(f"| nginx `sub_filter` proxy, all (same run) | | {nginx_per_page:.0f} µs |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(sys.argv[1]))
