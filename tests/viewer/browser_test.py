"""The viewer in a real browser: headless Chromium (Debian's) opens the page of a running
hilsim-server, and the test reads what the page shows through the DevTools protocol.

It checks that the page draws the session (a scene, frames arriving, a canvas that is not blank),
that the robot moves as the session advances and stops when paused from the page's own button,
that reset brings time back to zero, and saves a screenshot (HILSIM_VIEWER_SCREENSHOT, default
viewer.png in the working directory) for a person to look at.

Environment: HILSIM_SERVER_EXE (the server), HILSIM_MODEL_DIR (bundled models), CHROMIUM (the
browser, default /usr/bin/chromium). Needs python3-websocket (websocket-client).
"""

import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request

import pytest
import websocket

SERVER_EXE = os.environ.get("HILSIM_SERVER_EXE", "hilsim-server")
TEST_DATA = os.environ.get("HILSIM_TEST_DATA_DIR", os.path.join(os.path.dirname(__file__), "..", "data"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SCREENSHOT = os.environ.get("HILSIM_VIEWER_SCREENSHOT", "viewer.png")

# Chromium draws WebGL on the CPU here (SwiftShader): on a loaded two-core machine a busy page
# answers its buttons in seconds, not milliseconds. The bound is for a hang, not a speed.
ACTION_TIMEOUT = 30
OPERATOR = "browser-test-operator"

CONFIG = """listen:
  address: 127.0.0.1
  grpc_port: 0
  udp: {enabled: false}
  metrics: {enabled: false}
  viewer: {enabled: true, port: 0, rate_hz: 30}
models:
  directory: MODELS
security:
  operator_secret: OPERATOR
session_defaults:
  thread: {lock_memory: false}
sessions:
  - {name: arm, model: iiwa14, start: true}
  - {name: linkage, model: four_bar, start: true}
  - {name: meshes, model: mesh_robot, start: false}
  - {name: legs, model: quadruped, start: true}
  - name: faulty
    model: pendulum
    start: true
    config: {faults: {schedule: [{type: free_joint, joint: hinge}]}}
"""


def wait_for(predicate, timeout, what, explain=lambda: ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} {explain()}")


@pytest.fixture(scope="module")
def server():
    directory = tempfile.mkdtemp(prefix="hilsim-viewer-")
    # models.directory: a URDF with STL and OBJ meshes beside it (tests/data/io)
    models = os.path.join(directory, "models")
    shutil.copytree(os.path.join(TEST_DATA, "io", "meshes"), os.path.join(models, "meshes"))
    shutil.copy(os.path.join(TEST_DATA, "io", "mesh_robot.urdf"), models)
    config = os.path.join(directory, "server.yaml")
    with open(config, "w") as f:
        f.write(CONFIG.replace("MODELS", models).replace("OPERATOR", OPERATOR))
    env = dict(os.environ)
    log_path = os.path.join(directory, "server.log")
    log = open(log_path, "w")
    process = subprocess.Popen([SERVER_EXE, "--config", config], stdout=log, stderr=subprocess.STDOUT,
                               env=env)

    def viewer_url():
        with open(log_path) as f:
            found = re.search(r"viewer (http://[0-9.]+:[0-9]+/)", f.read())
        return found.group(1) if found else None

    try:
        url = wait_for(viewer_url, 10, "the server to say where its viewer listens")
        yield url
    finally:
        process.terminate()
        process.wait(10)
        log.close()
        shutil.rmtree(directory, ignore_errors=True)


class Browser:
    """One headless Chromium and a DevTools connection to its page."""

    def __init__(self, width=1200, height=720):
        self.profile = tempfile.mkdtemp(prefix="hilsim-chromium-")
        self.process = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--no-first-run", "--disable-extensions",
             "--use-angle=swiftshader", "--enable-unsafe-swiftshader",  # WebGL without a GPU
             f"--window-size={width},{height}", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        wait_for(lambda: os.path.exists(port_file) and open(port_file).read().strip(), 30,
                 "Chromium's DevTools port")
        port = int(open(port_file).read().split()[0])
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
        page = next(t for t in targets if t["type"] == "page")
        # one DevTools call may wait behind a busy renderer (see ACTION_TIMEOUT)
        self.socket = websocket.create_connection(page["webSocketDebuggerUrl"],
                                                  timeout=4 * ACTION_TIMEOUT)
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                return message["result"]

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def close(self):
        self.socket.close()
        self.process.terminate()
        self.process.wait(10)
        shutil.rmtree(self.profile, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"no browser at {CHROMIUM} (scripts/setup installs Debian's chromium)")
    b = Browser()
    yield b
    b.close()


def body_positions(browser):
    return browser.evaluate(
        "window.hilsimViewer.lastFrame && "
        "[...Array(window.hilsimViewer.lastFrame.poses.length / 7).keys()]"
        ".map(i => window.hilsimViewer.bodyPosition(i))")


def frame_time(browser):
    return browser.evaluate("window.hilsimViewer.lastFrame ? window.hilsimViewer.lastFrame.time : -1")


def page_report(browser):
    """What the page says: its state badge, message line and frame count."""
    return browser.evaluate(
        "`(state ${document.getElementById('state').textContent}, message "
        "'${document.getElementById('message').textContent}', "
        "${window.hilsimViewer.frames} frames)`")


def spread(a, b):
    return max(abs(x - y) for p, q in zip(a, b) for x, y in zip(p, q))


def test_the_page_shows_the_session_moving_and_its_buttons_drive_it(server, browser):
    browser.call("Page.enable")
    # the start-up sessions are the operator's: the page drives them with the operator's secret
    browser.call("Page.navigate", url=server + f"#session=1&owner={OPERATOR}")
    wait_for(lambda: browser.evaluate("window.hilsimViewer && window.hilsimViewer.sceneLoaded"), 20,
             "the scene of session 1")
    wait_for(lambda: browser.evaluate("window.hilsimViewer.frames") >= 10, ACTION_TIMEOUT, "ten frames")
    assert browser.evaluate("document.getElementById('state').textContent") == "RUNNING"
    assert browser.evaluate("document.querySelectorAll('#joints tbody tr').length") == 7

    # The arm has no controller: it falls, and the drawn links follow it.
    before = body_positions(browser)
    t0 = frame_time(browser)
    wait_for(lambda: frame_time(browser) > t0 + 0.5, ACTION_TIMEOUT, "half a second of simulation")
    after = body_positions(browser)
    assert len(before) == 8  # the world and seven links
    assert spread(before, after) > 1e-3, "the drawn arm did not move while the session ran"

    # The canvas shows something besides the background: the robot, the grid, the axes.
    drawn = browser.evaluate("""(() => {
        const source = document.querySelector('#view canvas');
        const copy = document.createElement('canvas');
        copy.width = source.width; copy.height = source.height;
        const context = copy.getContext('2d');
        context.drawImage(source, 0, 0);
        const pixels = context.getImageData(0, 0, copy.width, copy.height).data;
        let other = 0;
        for (let i = 0; i < pixels.length; i += 16) {  // every fourth pixel is enough
          if (Math.abs(pixels[i] - 0x15) + Math.abs(pixels[i + 1] - 0x18) +
              Math.abs(pixels[i + 2] - 0x1d) > 24) ++other;
        }
        return other / (pixels.length / 16);
      })()""")
    assert drawn > 0.005, f"only {drawn:.4f} of the canvas differs from the background"

    # Pause from the page: time stops, and so does the drawing.
    browser.evaluate("document.getElementById('pause').click()")
    wait_for(lambda: browser.evaluate("document.getElementById('state').textContent") == "PAUSED",
             ACTION_TIMEOUT, "the PAUSED state", lambda: page_report(browser))
    # The cycle that was running when the pause came may still be published: let it land.
    time.sleep(0.3)
    paused_at = frame_time(browser)
    held = body_positions(browser)
    time.sleep(0.5)
    assert frame_time(browser) == paused_at
    assert spread(held, body_positions(browser)) == 0.0

    # Play again: it moves on. Reset: back to time zero and CREATED.
    browser.evaluate("document.getElementById('start').click()")
    wait_for(lambda: frame_time(browser) > paused_at + 0.2, ACTION_TIMEOUT, "the session to run again",
             lambda: page_report(browser))
    browser.evaluate("document.getElementById('reset').click()")
    wait_for(lambda: browser.evaluate("document.getElementById('state').textContent") == "CREATED",
             ACTION_TIMEOUT, "the CREATED state", lambda: page_report(browser))
    assert frame_time(browser) == 0.0
    browser.evaluate("document.getElementById('start').click()")
    wait_for(lambda: frame_time(browser) > 0.3, ACTION_TIMEOUT, "the run after the reset",
             lambda: page_report(browser))


def switch_to(browser, session):
    browser.evaluate("(() => { const s = document.getElementById('session');"
                     f" s.value = '{session}'; s.dispatchEvent(new Event('change')); }})()")
    wait_for(lambda: browser.evaluate("window.hilsimViewer.sessionId") == session and
             browser.evaluate("window.hilsimViewer.sceneLoaded"), ACTION_TIMEOUT,
             f"the scene of session {session}")


def test_a_urdfs_meshes_are_fetched_and_drawn(server, browser):
    switch_to(browser, "3")
    # the base's tetrahedron (STL) and the arm's wedge (OBJ)
    wait_for(lambda: browser.evaluate("window.hilsimViewer.meshesLoaded") >= 2, ACTION_TIMEOUT,
             "two meshes", lambda: page_report(browser))
    assert browser.evaluate("document.getElementById('message').textContent") == ""


def test_the_ground_the_feet_and_their_forces_are_drawn_and_the_camera_follows(server, browser):
    switch_to(browser, "4")
    wait_for(lambda: browser.evaluate(
        "window.hilsimViewer.lastFrame && window.hilsimViewer.lastFrame.session_id === '4' && "
        "window.hilsimViewer.lastFrame.contact_force.length === 36"),
        ACTION_TIMEOUT, "a frame of the quadruped with its contact spheres' forces",
        lambda: page_report(browser))
    assert browser.evaluate("window.hilsimViewer.ground()")
    # without a controller it lies down on its feet, knees and belly: arrows show
    wait_for(lambda: browser.evaluate("window.hilsimViewer.contacts().arrows") >= 4, ACTION_TIMEOUT,
             "force arrows at the spheres on the ground", lambda: page_report(browser))
    assert browser.evaluate("window.hilsimViewer.contacts().spheres") == 12
    # the camera was fitted to it and follows its base (body 1)
    assert browser.evaluate("window.hilsimViewer.inView(1)")


def test_a_joint_at_its_stop_is_marked(server, browser):
    switch_to(browser, "1")
    # the limp arm folds onto its joint stops within a couple of seconds
    wait_for(lambda: browser.evaluate("document.querySelectorAll('#joints tr.at-limit').length") >= 1,
             ACTION_TIMEOUT, "a joint row marked at its stop", lambda: page_report(browser))
    counts = browser.evaluate("document.querySelector('#joints tr.at-limit').cells[5].textContent")
    assert re.fullmatch(r"\d+ / [1-9]\d*", counts), counts


def test_the_injected_faults_are_listed_and_their_joints_marked(server, browser):
    switch_to(browser, "5")
    wait_for(lambda: "free_joint on hinge (#1)" in browser.evaluate(
        "document.getElementById('faults').textContent"), ACTION_TIMEOUT,
        "the scheduled fault listed", lambda: page_report(browser))
    assert browser.evaluate("document.querySelectorAll('#joints tr.faulted').length") == 1
    assert browser.evaluate("document.querySelector('#joints tr.faulted').cells[1].textContent") \
        == "hinge"


def test_a_closed_loop_is_drawn_with_its_closure(server, browser):
    switch_to(browser, "2")
    wait_for(lambda: browser.evaluate(
        "window.hilsimViewer.lastFrame && window.hilsimViewer.lastFrame.session_id === '2'"),
        ACTION_TIMEOUT, "a frame of the four-bar")
    points = browser.evaluate("window.hilsimViewer.lastFrame.closure_points")
    assert len(points) == 6
    assert max(abs(a - b) for a, b in zip(points[:3], points[3:])) < 1e-6
    # back to the arm for the picture
    switch_to(browser, "1")
    wait_for(lambda: browser.evaluate(
        "window.hilsimViewer.lastFrame && window.hilsimViewer.lastFrame.session_id === '1'"),
        ACTION_TIMEOUT, "a frame of the arm")
    time.sleep(1.5)  # the plots fill
    shot = browser.call("Page.captureScreenshot", format="png")
    with open(SCREENSHOT, "wb") as f:
        f.write(base64.b64decode(shot["data"]))
    assert os.path.getsize(SCREENSHOT) > 20_000
