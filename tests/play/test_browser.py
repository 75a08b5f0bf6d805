"""`normjax play` in a real browser: the system Chromium driven by Selenium (slow tier).

The app runs a study (``--assign 1``) in a thread on a free local port;
headless Chromium (/usr/bin/chromium with the system chromedriver; never a
downloaded browser) opens the participant's page, reads the consent page and
clicks "I agree" (recorded before any step), then on the play page types a
belief, sets the confidence, presses arrow keys and space, reloads
mid-interaction and goes on, and the test checks the log: every key press
once, in order, none lost or repeated by the reload, with the typed belief.
Only when NORMJAX_PLAY_SCREENSHOT names a file is a screenshot written there
(``NORMJAX_PLAY_SCREENSHOT=docs/play_page.png``: the picture of docs/play.md
and README); otherwise the test writes nothing outside its temporary folder.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("flask", reason="needs the [play] extra (Flask)")
webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium ([test] extra)")

from normjax.play.app import create_app  # noqa: E402 (after the importorskip of its extra)
from normjax.play.session import LOG, read_log  # noqa: E402 (after the importorskip of its extra)
from normjax.play.study import Study  # noqa: E402 (after the importorskip of its extra)

CHROMIUM, DRIVER = "/usr/bin/chromium", shutil.which("chromedriver") or "/usr/bin/chromedriver"
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)),
        reason="needs the system Chromium and chromedriver (apt-get install chromium "
        "chromium-driver; .ci/run installs them)",
    ),
]
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1300,900",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    from werkzeug.serving import make_server

    out = tmp_path / "study"
    study = Study(out, [0], 1, seed=0, interaction_steps=12)  # one norm in the pool: the assignment is norm 0
    app = create_app(out, [0], interaction_steps=12, study=study)
    srv = make_server("127.0.0.1", _free_port(), app, threaded=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_port}", out, app
    srv.shutdown()
    for s in app.config["sessions"].values():
        s.close()


@pytest.fixture
def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = CHROMIUM
    for f in FLAGS:
        opts.add_argument(f)
    drv = webdriver.Chrome(service=Service(executable_path=DRIVER), options=opts)
    yield drv
    drv.quit()


def _wait(pred, timeout=120.0):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return
        time.sleep(0.2)
    raise AssertionError("timed out waiting for the page")


def _turn(drv) -> int:
    return drv.execute_script("return view && view.status === 'playing' && !busy ? view.turn : -1")


def test_play_in_chromium(server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    url, out, _ = server
    browser.get(f"{url}/p/carol")  # the consent page first; nothing is played or recorded before "I agree"
    assert "Before you start" in browser.find_element(By.TAG_NAME, "h2").text
    assert "What you will do" in browser.find_element(By.ID, "consent").text  # the shipped template
    assert not (Path(out) / "carol").exists()
    browser.find_element(By.ID, "agree").click()
    _wait(lambda: browser.execute_script("return typeof view !== 'undefined'") and _turn(browser) == 0)
    consent = json.loads((Path(out) / "carol" / "consent.json").read_text())
    assert consent["participant"] == "carol" and consent["agreed_at"]
    assert "Norm 1 of 1 - interaction phase" in browser.find_element(By.ID, "status").text
    _wait(
        lambda: browser.execute_script(
            "const i = document.getElementById('frame'); return i.complete && i.naturalWidth > 15 * 32"
        )
    )  # the frame shows
    box = browser.find_element(By.ID, "belief")
    box.send_keys("agents avoid zone Q")
    browser.execute_script(
        "const c = document.getElementById('conf'); c.value = 0.6; c.dispatchEvent(new Event('input'));"
    )
    box.send_keys(Keys.ESCAPE)  # Escape leaves the text box: keys now act (a click on the body may hit a button)
    keys = [Keys.ARROW_LEFT, Keys.SPACE, Keys.ARROW_UP]
    for i, k in enumerate(keys):
        browser.find_element(By.TAG_NAME, "body").send_keys(k)
        _wait(lambda: _turn(browser) == i + 1)
    if os.environ.get("NORMJAX_PLAY_SCREENSHOT"):
        browser.save_screenshot(os.environ["NORMJAX_PLAY_SCREENSHOT"])
    browser.refresh()  # a reload mid-episode resumes at the same turn
    _wait(lambda: _turn(browser) == 3)
    assert browser.find_element(By.ID, "belief").get_attribute("value") == "agents avoid zone Q"
    browser.find_element(By.ID, "b-wait").click()
    _wait(lambda: _turn(browser) == 4)
    log = read_log(Path(out) / "carol" / LOG)
    assert [r["turn"] for r in log] == [0, 1, 2, 3]
    assert [r["action"] for r in log] == [2, 4, 0, 4]  # left, wait, up, wait
    assert {r["belief"] for r in log} == {"agents avoid zone Q"} and {r["confidence"] for r in log} == {0.6}
