#!/usr/bin/python3
"""Drives `syncagent web` in a real browser (Debian's chromium, headless, through chromedriver and
selenium) as a person would, for e2e/test_web.sh, in one session:
  1. opens the page with its token: the cookie is HttpOnly and SameSite=Strict, the address loses
     the token, two devices are shown, the live connection is up;
  2. writes PHOTOS photos of 2 MB into the phone's data directory and watches the page meanwhile:
     a progress bar appears (and, when the machine is slow enough to catch it, short of its end)
     until the watch's data directory holds every photo;
  3. opens the conflict side by side and clicks "Keep KEEP's"; the conflict leaves the page.
Screenshots of each step go to SHOTS. Exits non-zero, saying what was missing, when the page fails.

    /usr/bin/python3 web_browser.py URL PHONE_DATA WATCH_DATA PHOTOS KEEP SHOTS
"""
import os, sys, time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By


def fail(message):
    print("web_browser: " + message, file=sys.stderr)
    sys.exit(1)


def wait(what, check, timeout=120, step=0.1):
    end = time.time() + timeout
    while time.time() < end:
        try:
            value = check()
            if value:
                return value
        except Exception:
            pass
        time.sleep(step)
    fail("timed out after %ds waiting for %s" % (timeout, what))


def click(driver, what, selector, attribute=None, timeout=60):
    """Finds the element and clicks it; returns `attribute` of it (or True). The page re-renders as
    the agents report, so an element found may be replaced before the click (selenium's stale
    element): it is found again, as a person would click the button now on the page."""
    def once():
        element = driver.find_element(By.CSS_SELECTOR, selector)
        value = element.get_attribute(attribute) if attribute else True
        element.click()
        return value
    return wait(what, once, timeout)


def shot(driver, shots, name):
    os.makedirs(shots, exist_ok=True)
    driver.save_screenshot(os.path.join(shots, name + ".png"))


def main(url, phone_data, watch_data, photos, keep, shots):
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1100,1600"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        run(driver, url, phone_data, watch_data, photos, keep, shots)
    finally:
        driver.quit()


def run(driver, url, phone_data, watch_data, photos, keep, shots):
    # 1. the page, with its token once
    driver.get(url)
    wait("the page without the token in its address", lambda: "token=" not in driver.current_url, 30)
    names = wait("two devices on the page", lambda: (lambda d: d if len(d) == 2 else None)(
        [e.text for e in driver.find_elements(By.CSS_SELECTOR, "section.agent .device-name")]), 60)
    wait("the live connection", lambda: driver.find_element(By.ID, "live").text == "live", 30)
    cookie = driver.get_cookie("syncagent_web")
    if not cookie or not cookie.get("httpOnly") or cookie.get("sameSite") != "Strict":
        fail("the token's cookie is not HttpOnly and SameSite=Strict: %r" % cookie)
    shot(driver, shots, "1-devices")
    print("devices on the page: %s" % ", ".join(names))

    # 2. photos while the page is watched
    os.makedirs(os.path.join(phone_data, "photos"), exist_ok=True)
    for i in range(photos):
        with open(os.path.join(phone_data, "photos", "IMG_%04d.jpg" % i), "wb") as f:
            f.write(b"\xff\xd8\xff\xe0" + os.urandom(2_000_000))
    seen, partial, shotted = {}, False, False
    end, there_since = time.time() + 150, None
    while time.time() < end:
        for task in driver.find_elements(By.CSS_SELECTOR, "section.agent .task"):
            try:
                device = task.find_element(By.XPATH, "./ancestor::section").get_attribute("data-device")
                title = device + ": " + task.get_attribute("data-task")
                bar = task.find_element(By.TAG_NAME, "progress")
                value, top = bar.get_attribute("value"), bar.get_attribute("max")
                line = task.find_element(By.CSS_SELECTOR, ".line").text
            except Exception:
                continue  # redrawn under our feet
            seen.setdefault(title, []).append(line)
            if value and top and 0 < float(value) < float(top):
                if not partial:
                    shot(driver, shots, "2-progress-partial")
                partial = True
            if not shotted:
                shot(driver, shots, "2-progress")
                shotted = True
        there = os.path.isdir(os.path.join(watch_data, "photos")) and len(os.listdir(os.path.join(watch_data, "photos"))) >= photos
        if there and seen:
            break
        if there:
            there_since = there_since or time.time()
            if time.time() - there_since > 5:  # a finished bar stays 3 s on the page
                break
        time.sleep(0.05)
    if not seen:
        fail("no progress bar appeared on the page while %d photos went from the phone to the watch" % photos)
    for title, lines in sorted(seen.items()):
        print("bar %s: seen %d times, last: %s" % (title, len(lines), lines[-1]))
    print("a bar short of its end was seen: %s" % partial)

    # 3. the conflict, side by side, settled by a click
    driver.refresh()
    cid = click(driver, "a conflict with a Compare button, clicked", "section.agent .conflict button[data-compare]", "data-compare")
    sel = "section.agent .conflict[data-conflict='%s'] .version" % cid
    versions = wait("the versions side by side", lambda: (lambda v: v if len(v) >= 2 else None)(driver.find_elements(By.CSS_SELECTOR, sel)), 30)
    names = [v.get_attribute("data-version") for v in versions]
    if keep not in names:
        fail("no version of %s among %s" % (keep, names))
    shot(driver, shots, "3-conflict")
    click(driver, "the Keep %s button, clicked" % keep, "section.agent .conflict[data-conflict='%s'] button[data-keep='%s']" % (cid, keep))
    wait("the conflict gone from the page", lambda: not driver.find_elements(By.CSS_SELECTOR, ".conflict[data-conflict='%s']" % cid), 60)
    shot(driver, shots, "4-resolved")
    print("resolved %s by clicking Keep %s's; versions shown: %s" % (cid, keep, ", ".join(names)))


if __name__ == "__main__":
    url, phone_data, watch_data, photos, keep, shots = sys.argv[1:7]
    main(url, phone_data, watch_data, int(photos), keep, shots)
