"""A judge's first minutes on the judging page (docs/judging-page.md), in headless Chromium driven by
Selenium through chromium-driver: real key presses, the grades a reference golden set's qrels hold (0 for
a pair they do not judge) standing in for the judge's.

The judge grades three pairs, four seconds apart, and the page is photographed (``PNG``); then thirty
more as fast as the keys come, each key press to the next pair on screen timed in the page.

    python docs/examples/judging_page_tour.py URL QRELS.tsv PNG SHEET.csv [SHEET.csv]

The sheets are the page's, in its order (the calibration copy first).
"""

from __future__ import annotations

import csv
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from chromium import driven
from judge_page_support import LATENCY_PROBE, latency, probe_results
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.support.wait import WebDriverWait

#: Seconds a judge reads an obvious pair before the key.
READING = 4.0
SLOW, FAST = 3, 30


def reference_grades(qrels: Path) -> dict[tuple[str, str], str]:
    with qrels.open(encoding="utf-8", newline="") as handle:
        return {
            (row["query-id"], row["corpus-id"]): row["score"]
            for row in csv.DictReader(handle, delimiter="\t")
        }


def page_order(sheets: list[Path]) -> list[tuple[str, str]]:
    """The pairs in the page's order: each sheet's rows in turn, a pair on two sheets once."""
    order: dict[tuple[str, str], None] = {}
    for sheet in sheets:
        with sheet.open(encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle):
                order.setdefault((row["query_id"], row["doc_id"]), None)
    return list(order)


def main() -> None:
    url, qrels, png, *sheets = sys.argv[1:]
    grades = reference_grades(Path(qrels))
    keys = [grades.get(pair, "0") for pair in page_order([Path(sheet) for sheet in sheets])]
    profile = Path(tempfile.mkdtemp(prefix="embeval-tour-"))
    driver = driven(profile, 1280, 880)
    try:
        driver.get(url)

        def where() -> str:
            text: str = driver.execute_script("return document.getElementById('where').textContent;")
            return text.split(" · ")[0]

        def until(condition: Callable[[], bool]) -> None:
            WebDriverWait(driver, 30, poll_frequency=0.01).until(lambda _: condition())

        def press(position: int) -> None:
            ActionChains(driver).send_keys(keys[position]).perform()
            until(lambda: where() == f"pair {position + 2} of {len(keys)}")

        until(lambda: where() == f"pair 1 of {len(keys)}")
        for position in range(SLOW):
            time.sleep(READING)
            press(position)
        saved = "return document.getElementById('saved').textContent === 'saved';"
        until(lambda: bool(driver.execute_script(saved)))
        driver.save_screenshot(png)
        bar = driver.execute_script(
            "return [...document.getElementById('bar').children].map((e) => e.textContent).filter(Boolean);"
        )
        print(f"the page after {SLOW} grades, {READING:g} seconds apart (the screenshot):")
        print("  " + " | ".join(bar))
        print("  " + driver.execute_script("return document.getElementById('calibration').textContent;"))
        driver.execute_script(LATENCY_PROBE)
        for position in range(SLOW, SLOW + FAST):
            press(position)
        figures = latency([probe_results(driver)])
        until(lambda: bool(driver.execute_script(saved)))  # every grade in the sheets before the tab closes
        print(f"key press to the next pair on screen, {figures.presses} grades in a row: {figures}")
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()
