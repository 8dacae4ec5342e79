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
