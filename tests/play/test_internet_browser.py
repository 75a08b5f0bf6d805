"""`normjax play` as a crowdsourced study on the internet, in the system Chromium (slow tier).

One study (``--assign 1``, a 2-step interaction phase, a completion code) runs in a thread
behind a small local reverse proxy that serves it under ``/normgym/`` (stripping the prefix,
as nginx's ``proxy_pass http://backend/`` does), with the folder lock held as `serve` holds it.
Headless Chromium opens the Prolific-style link through the proxy, agrees to the consent
page and presses a key; the test then checks, in order:

* the step is logged, and the Prolific parameters are stored with the participant;
* another browser context (no token) gets the same answer for this participant's id as
  for an unknown id, and nothing on disk changes;
* a 10 MB body through the proxy gets 413;
* a second ``normjax play`` on the same --out refuses to start (the lock);
* the participant finishes (the remaining steps over HTTP with the browser's own cookie),
  the page shows the questionnaire, the browser answers it, and the finish page shows the
  completion code;
* ``play-export`` holds the Prolific ids, the per-action timestamps and the answers;
* after the server stops, restarting with other ``--norms`` is refused.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("flask", reason="needs the [play] extra (Flask)")
webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium ([test] extra)")

from normjax.play.app import create_app  # noqa: E402 (after the importorskip of its extra)
from normjax.play.export import export_study  # noqa: E402 (after the importorskip of its extra)
from normjax.play.guard import FolderLock  # noqa: E402 (after the importorskip of its extra)
from normjax.play.server import local_server  # noqa: E402 (after the importorskip of its extra)
from normjax.play.session import LOG, read_log  # noqa: E402 (after the importorskip of its extra)
from normjax.play.study import Study  # noqa: E402 (after the importorskip of its extra)
from normjax.testing.play_driver import action_word  # noqa: E402 (after the importorskip of its extra)

CHROMIUM, DRIVER = "/usr/bin/chromium", shutil.which("chromedriver") or "/usr/bin/chromedriver"
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)),
        reason="needs the system Chromium and chromedriver (apt-get install chromium chromium-driver)",
    ),
]
ROOT = Path(__file__).resolve().parents[2]
PREFIX = "/normgym"


def _proxy(backend: str):
    """A reverse proxy on a free port: PREFIX/... -> backend/... (Host and Cookie passed on)."""

    class Proxy(http.server.BaseHTTPRequestHandler):
        def _forward(self):
            if not self.path.startswith(PREFIX + "/"):
                self.send_error(404)
                return
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else None
            headers = {k: v for k, v in self.headers.items() if k.lower() in ("cookie", "content-type", "host")}
            req = urllib.request.Request(
                backend + self.path[len(PREFIX) :], data=body, method=self.command, headers=headers
            )
            try:
                with urllib.request.urlopen(req, timeout=300) as r:
                    status, hdrs, data = r.status, r.headers.items(), r.read()
            except urllib.error.HTTPError as e:
                status, hdrs, data = e.code, e.headers.items(), e.read()
            self.send_response(status)
            for k, v in hdrs:
                if k.lower() not in ("content-length", "connection", "transfer-encoding", "server", "date"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _forward

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


@pytest.fixture
def study(tmp_path):
    out = tmp_path / "study"
    lock = FolderLock(out).acquire()
    st = Study(out, [0], 1, seed=0, interaction_steps=2)
    app = create_app(out, [0], interaction_steps=2, study=st, completion_code="C0DE42")
    backend = local_server("127.0.0.1", 0, app)
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    proxy = _proxy(f"http://127.0.0.1:{backend.server_port}")
    yield f"http://127.0.0.1:{proxy.server_port}{PREFIX}", out, app
    proxy.shutdown()
    backend.shutdown()
    for s in app.config["sessions"].values():
        s.close()
    lock.release()


def _chrome():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = CHROMIUM
    for f in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--window-size=1300,900"):
        opts.add_argument(f)
    return webdriver.Chrome(service=Service(executable_path=DRIVER), options=opts)


def _wait(pred, timeout=300.0):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return
        time.sleep(0.2)
    raise AssertionError("timed out waiting for the page")


def _files(out: Path) -> dict:
    return {str(p): p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != "timing.jsonl"}


def _settled(out: Path, quiet_s: float = 1.0, timeout: float = 60.0) -> dict:
    """The study's files once they have not changed for `quiet_s` (the server has finished writing)."""
    end = time.time() + timeout
    last = _files(out)
    while time.time() < end:
        time.sleep(quiet_s)
        now = _files(out)
        if now == last:
            return now
        last = now
    raise AssertionError("the study's files kept changing")


def _call(url, cookie=None, body=None, data=None):
    headers = {"Content-Type": "application/json", **({"Cookie": cookie} if cookie else {})}
    raw = data if data is not None else (None if body is None else json.dumps(body).encode())
    req = urllib.request.Request(url, data=raw, method="GET" if raw is None else "POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "normjax.cli", "play", *map(str, args), "--port", "1", "--no-warmup"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_crowdsourced_participant_through_a_proxy(study, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    url, out, app = study
    drv = _chrome()
    try:
        drv.get(f"{url}/?PROLIFIC_PID=5f0c1a2b3c4d5e6f7a8b9c0d&STUDY_ID=st1&SESSION_ID=se1")
        _wait(lambda: "/p/5f0c1a2b3c4d5e6f7a8b9c0d" in drv.current_url)
        pid = "5f0c1a2b3c4d5e6f7a8b9c0d"
        drv.find_element(By.ID, "agree").click()
        _wait(lambda: drv.execute_script("return typeof view !== 'undefined' && view && view.status === 'playing'"))
        drv.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_LEFT)
        _wait(lambda: len(read_log(out / pid / LOG)) == 1)
        meta = json.loads((out / pid / "participant.json").read_text())
        assert meta["ids"] == {"PROLIFIC_PID": pid, "STUDY_ID": "st1", "SESSION_ID": "se1"}

        # Someone else (no token): the same answer as for an unknown id; nothing changes.  The
        # participant's own step may still be writing its transcript: start from a settled study.
        before = _settled(out)
        for path in ("view", "frame.png"):
            assert _call(f"{url}/api/{pid}/{path}") == _call(f"{url}/api/nobody{path[:2]}/{path}")
        step = dict(turn=1, action="up")
        assert _call(f"{url}/api/{pid}/step", body=step) == _call(f"{url}/api/nobody/step", body=step)
        assert _call(f"{url}/api/{pid}/step", body=step)[0] == 404
        assert _files(out) == before

        code, got = _call(f"{url}/api/{pid}/step", data=b"x" * (10 * 1024 * 1024))
        assert code == 413 and got == {"error": "request entity too large"}
        second = _cli("--assign", "1", "--norms", "forbidden_zone_q", "--interaction-steps", "2", "--out", out)
        assert second.returncode == 2 and "in use by another normjax play server" in second.stderr, second.stderr

        # The rest of the session over HTTP with the browser's own cookie, then the finish page.
        cookie = "; ".join(f"{c['name']}={c['value']}" for c in drv.get_cookies())
        code, view = _call(f"{url}/api/{pid}/view", cookie)
        while view["status"] in ("starting", "playing"):
            if "phase" not in view:  # the world is still compiling or stepping: ask again
                code, view = _call(f"{url}/api/{pid}/view", cookie)
                continue
            code, view = _call(f"{url}/api/{pid}/step", cookie, dict(turn=view["turn"], action=action_word(view)))
            assert code == 200, view
        assert view["status"] == "done" and view["questions"][0]["id"] == "evidence_source"
        drv.refresh()
        _wait(lambda: drv.find_elements(By.CSS_SELECTOR, "#questions input[type=radio]"))
        drv.find_elements(By.CSS_SELECTOR, "#questions input[type=radio]")[0].click()
        drv.find_element(By.CSS_SELECTOR, "#questions button").click()
        _wait(lambda: drv.find_elements(By.ID, "code"))
        assert drv.find_element(By.ID, "code").text == "C0DE42"
        assert "Your completion code" in drv.find_element(By.ID, "completion").text
    finally:
        drv.quit()

    export_study(out)
    entry = json.loads((out / "export.json").read_text())["participants"][pid]
    assert entry["status"] == "complete" and entry["ids"]["PROLIFIC_PID"] == pid
    assert entry["questionnaire"]["evidence_source"].startswith("Watching the other agents")
    timing = [t for t in entry["timing"] if "turn" in t]
    assert [t["turn"] for t in timing] == list(range(len(read_log(out / pid / LOG))))
    assert all(t["think_s"] >= 0 and t["wall"].endswith("+00:00") and t["mono"] > 0 for t in timing)


def test_restart_with_other_norms_is_refused(tmp_path):
    out = tmp_path / "study"
    create_app(out, [0], interaction_steps=2)  # a first start (its run identity)
    other = _cli("--norms", "all_exit_left", "--interaction-steps", "2", "--out", out)
    assert other.returncode == 2 and "norms: ['forbidden_zone_q'] -> ['all_exit_left']" in other.stderr, other.stderr
