"""The report in a real headless Chromium: no console errors, no network, every figure drawn.

Drives Debian's ``/usr/bin/chromium`` over the Chrome DevTools Protocol with ``websocket-client``
(no browser download). Skipped with a reason when Chromium is absent outside CI; in CI (``CI``
set) a missing browser fails the test.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from test_report import make_plan_dir, make_run_dir, make_sweep_dir

from tiersim.report import write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--mute-audio",
         "--window-size=1280,900", "--remote-debugging-port=0", "--remote-allow-origins=*"]

if CHROMIUM is None and not os.environ.get("CI"):
    pytest.skip("chromium not installed (apt-get install -y chromium); required in CI",
                allow_module_level=True)
websocket = pytest.importorskip("websocket") if not os.environ.get("CI") else __import__(
    "websocket")


class Browser:
    """A headless Chromium process and one page driven over CDP."""

    def __init__(self, profile: Path):
        assert CHROMIUM, "chromium is required in CI: apt-get install -y chromium"
        self.proc = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={profile}",
                                      "about:blank"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        port = self._port(profile / "DevToolsActivePort")
        pages = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list").read())
        url = next(p["webSocketDebuggerUrl"] for p in pages if p["type"] == "page")
        self.ws = websocket.create_connection(url, timeout=60, suppress_origin=True)
        self.next_id, self.events = 0, []

    def _port(self, path: Path) -> int:
        """The DevTools port Chromium chose, from its DevToolsActivePort file."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if path.exists() and path.read_text().strip():
                return int(path.read_text().split()[0])
            assert self.proc.poll() is None, "chromium exited at start-up"
            time.sleep(0.05)
        raise TimeoutError("chromium did not open its DevTools port")

    def call(self, method: str, **params) -> dict:
        """Send one CDP command and wait for its answer, keeping events seen meanwhile."""
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                assert "error" not in message, message
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method: str, timeout: float = 60) -> None:
        """Wait until an event named ``method`` arrives."""
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            assert time.monotonic() < deadline, f"no {method} within {timeout}s"
            self.events.append(json.loads(self.ws.recv()))

    def close(self) -> None:
        """Close the connection and end the browser process."""
        self.ws.close()
        self.proc.kill()
        self.proc.wait()


CHECK_FIGURES = """
Array.from(document.querySelectorAll('.figure')).map(f => {
  const g = f.querySelector('.plotly-graph-div');
  const svg = g ? g.querySelector('svg.main-svg') : null;
  return {key: f.dataset.key, svg: !!svg, traces: g ? g.querySelectorAll('g.trace').length : 0,
          marks: g ? g.querySelectorAll('g.trace path, g.trace .point').length : 0,
          title: g ? (g.querySelector('.gtitle') || {}).textContent || '' : '',
          caption: (f.querySelector('.caption') || {}).textContent || ''};
})
"""


def open_report(report: Path, profile: Path, screenshot: Path) -> tuple[list, list, list]:
    """Load the report; return (figures, console errors, network requests) and save a PNG."""
    browser = Browser(profile)
    try:
        for domain in ("Page", "Runtime", "Log", "Network"):
            browser.call(f"{domain}.enable")
        browser.call("Page.navigate", url=report.resolve().as_uri())
        browser.wait_for("Page.loadEventFired")
        time.sleep(1.0)  # let plotly's async layout settle
        figures = browser.call("Runtime.evaluate", expression=CHECK_FIGURES,
                               returnByValue=True)["result"]["value"]
        shot = browser.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        screenshot.write_bytes(base64.b64decode(shot["data"]))
        events = browser.events
    finally:
        browser.close()
    errors = [e for e in events if e.get("method") == "Runtime.exceptionThrown"
              or (e.get("method") == "Runtime.consoleAPICalled"
                  and e["params"]["type"] in ("error", "assert"))
              or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")]
    network = [e["params"]["request"]["url"] for e in events
               if e.get("method") == "Network.requestWillBeSent"
               and not e["params"]["request"]["url"].startswith(("file:", "data:", "about:"))]
    return figures, errors, network


@pytest.mark.parametrize("make", [make_run_dir, make_sweep_dir, make_plan_dir])
def test_report_renders_offline_in_chromium(tmp_path, make):
    directory = make(tmp_path / "result")
    report = write_report(directory)
    shot = tmp_path / f"report_{make.__name__}.png"
    figures, errors, network = open_report(report, tmp_path / "chromium-profile", shot)
    assert errors == [], errors
    assert network == [], network
    assert figures, "the report has no figures"
    for figure in figures:
        assert figure["svg"] and figure["traces"] > 0 and figure["marks"] > 0, figure
        assert figure["title"] and figure["caption"], figure
    assert shot.stat().st_size > 10_000


TIMESERIES_BOX = """
(() => {
  const f = document.querySelector('.figure[data-key="load_over_time"]');
  f.scrollIntoView();
  const r = f.getBoundingClientRect();
  const g = f.querySelector('.plotly-graph-div');
  const lines = Array.from(g.querySelectorAll('g.trace.scatter path.js-line'))
    .map(p => (p.getAttribute('d') || '').length);
  return {x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width,
          height: r.height, lines: lines, titles: Array.from(g.querySelectorAll(
            '.annotation-text')).map(a => a.textContent)};
})()
"""


def png_colours(data: bytes) -> int:
    """Distinct pixel colours of an 8-bit RGB(A) PNG (decoded with zlib; no imaging library)."""
    import struct
    import zlib

    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, header = 8, [], None
    while pos < len(data):
        size, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + size]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + size
    width, height, depth, colour = header[:4]
    assert depth == 8 and colour in (2, 6)
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(b"".join(chunks)), width * bpp
    prev, seen = bytearray(stride), set()
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc
                                      else corner)) & 0xFF
        seen.update(bytes(line[i:i + 3]) for i in range(0, stride, bpp * 7))
        prev = line
    return len(seen)


def test_time_series_charts_render_in_chromium(tmp_path):
    """A screenshot of the load/queue/KV chart: drawn lines in every row, tier colours on it."""
    directory = make_run_dir(tmp_path / "result")
    report = write_report(directory)
    browser = Browser(tmp_path / "chromium-profile")
    try:
        for domain in ("Page", "Runtime"):
            browser.call(f"{domain}.enable")
        browser.call("Page.navigate", url=report.resolve().as_uri())
        browser.wait_for("Page.loadEventFired")
        time.sleep(1.0)
        box = browser.call("Runtime.evaluate", expression=TIMESERIES_BOX,
                           returnByValue=True)["result"]["value"]
        clip = {k: box[k] for k in ("x", "y", "width", "height")} | {"scale": 1}
        shot = browser.call("Page.captureScreenshot", format="png", clip=clip,
                            captureBeyondViewport=True)
    finally:
        browser.close()
    png = base64.b64decode(shot["data"])
    (tmp_path / "timeseries.png").write_bytes(png)
    assert box["height"] > 500 and box["width"] > 500
    # 3 rows x 2 tiers of mean lines + 2 queue maxima, every one with a drawn path
    assert len(box["lines"]) >= 8 and min(box["lines"]) > 20, box["lines"]
    assert any("queue" in t for t in box["titles"]), box["titles"]
    assert png_colours(png) >= 4  # background, grid, and the tiers' colours
