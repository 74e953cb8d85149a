"""The judging page in a real browser: Debian's chromium, headless, driven by Selenium through
chromium-driver. One browser serves every test of the module; each test starts its own ``embeval
judge-page`` process (killed with SIGKILL where the test says so)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chromium import CHROMEDRIVER, CHROMIUM, driven
from judge_page_support import (
    HOSTILE,
    HOSTILE_DOC,
    LABELS,
    LATENCY_PROBE,
    LONG_DOC,
    PageServer,
    grades_of,
    in_order,
    latency,
    probe_results,
    sheet_cells,
    write_calibration_sheets,
    write_judging_set,
    write_pool_sheet,
)

from pytest_embeval.golden.loader import load_golden
from pytest_embeval.judging.agreement import agreement
from pytest_embeval.judging.merging import merge_sheets, sheet_grades
from pytest_embeval.judging.pooling import read_sheet

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)",
)
#: How long a wait for the page may take before the test fails (a loaded machine is slow, not broken).
WAIT = 30


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    pytest.importorskip("selenium", reason="needs selenium (the [test] extra)")
    profile = Path(tempfile.mkdtemp(prefix="embeval-chromium-"))
    driver = driven(profile, 1200, 900)
    driver.set_page_load_timeout(WAIT)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def servers() -> Iterator[list[PageServer]]:
    """The servers a test starts, stopped at its end whatever happens."""
    started: list[PageServer] = []
    yield started
    for server in started:
        server.kill()


@pytest.fixture
def pooled(tmp_path: Path) -> tuple[Path, Path, list[tuple[str, str]]]:
    """The test golden set, its pool sheet (28 pairs), and the sheet's pairs in order."""
    golden_path = write_judging_set(tmp_path)
    sheet = write_pool_sheet(golden_path, tmp_path / "pool.csv")
    return golden_path, sheet, list(in_order(sheet))


def serve(browser: Any, servers: list[PageServer], *arguments: str | Path, total: int) -> PageServer:
    """Start ``embeval judge-page ARGUMENTS`` and open its page at its first pair to grade."""
    servers.append(PageServer(*arguments))
    browser.get(servers[-1].url)
    at_pair(browser, 1, total)
    return servers[-1]


def keys(driver: Any, *pressed: str) -> None:
    """Key presses, as a judge's keyboard sends them to the page (no element is clicked)."""
    from selenium.webdriver.common.action_chains import ActionChains

    chain = ActionChains(driver)
    for key in pressed:
        chain.send_keys(key)
    chain.perform()


def wait_for(driver: Any, script: str, expected: Any) -> None:
    """Wait until ``script`` (a JavaScript expression) is ``expected``."""
    from selenium.webdriver.support.wait import WebDriverWait

    WebDriverWait(driver, WAIT, poll_frequency=0.01).until(
        lambda d: d.execute_script(f"return {script};") == expected,
        message=f"{script} never became {expected!r}",
    )


def text(driver: Any, element_id: str) -> str:
    value: str = driver.execute_script(f"return document.getElementById('{element_id}').textContent;")
    return value


def at_pair(driver: Any, number: int, total: int) -> None:
    wait_for(
        driver, "document.getElementById('where').textContent.split(' · ')[0]", f"pair {number} of {total}"
    )


def saved(driver: Any) -> None:
    wait_for(driver, "document.getElementById('saved').textContent", "saved")


def test_a_judge_grades_by_keys_goes_back_survives_a_killed_server_and_the_sheet_merges(
    browser: Any, servers: list[PageServer], pooled: tuple[Path, Path, list[tuple[str, str]]]
) -> None:
    golden_path, sheet, order = pooled
    total = len(order)
    assert total == 28
    serve(browser, servers, sheet, "--golden", golden_path, "--judge", "ana", total=total)
    assert text(browser, "guidelines-text").startswith("# Relevance of the test set")
    # one button (and key) per grade of the golden set's scale, labelled as its guidelines name them
    assert browser.execute_script(
        "return [...document.querySelectorAll('#grades button')].map((b) => b.textContent);"
    ) == [f"{grade}{label}" for grade, label in enumerate(LABELS)]
    browser.execute_script(LATENCY_PROBE)
    given = {}
    for position in range(20):
        grade = str((position * 7 + position // 3) % 3)
        keys(browser, grade)
        given[order[position]] = grade
        at_pair(browser, position + 2, total)
        # what the page shows is the sheet's pair at that position, in the sheet's order
        shown_query = text(browser, "query")
        assert shown_query == f"how do I do thing {order[position + 1][0][1:]}?"
    # back three pairs (to the 18th) and change its grade: the page goes on at the first ungraded pair
    keys(browser, "\ue012", "\ue012", "\ue012")  # ArrowLeft
    at_pair(browser, 18, total)
    assert f"graded {given[order[17]]}" in text(browser, "where")
    changed = "2" if given[order[17]] != "2" else "0"
    keys(browser, changed)
    given[order[17]] = changed
    at_pair(browser, 21, total)
    saved(browser)
    assert text(browser, "done") == f"20 of {total} done"
    assert {pair: grade for pair, grade in grades_of(sheet).items() if grade} == given

    probes = [probe_results(browser)]

    # the server is killed (no handler runs) and started again: the page resumes at the first ungraded pair
    servers[-1].kill()
    servers.append(PageServer(sheet, "--golden", golden_path, "--judge", "ana"))
    browser.get(servers[-1].url)
    at_pair(browser, 21, total)
    assert text(browser, "done") == f"20 of {total} done"
    browser.execute_script(LATENCY_PROBE)
    for position in range(20, total):
        keys(browser, "1")
        given[order[position]] = "1"
    wait_for(browser, "document.getElementById('finished').hidden", False)
    saved(browser)
    probes.append(probe_results(browser))
    assert "embeval merge page.yaml pool.csv" in text(browser, "finished-text")
    lines = servers[-1].stop()
    assert lines[-1] == f"stopped: {total} of {total} pairs graded"

    # every grade as given, and nothing else, merges into the golden set
    result = merge_sheets(load_golden(golden_path), [read_sheet(sheet)])
    assert {(j.query_id, j.doc_id): str(j.grade) for j in result.new} == given
    assert {j.judge for j in result.new} == {"ana"}

    # 20 grades, 3 steps back and a change; then 8 grades, the last of which shows no next pair
    report_latency(probes, presses=24 + 7)


def report_latency(probes: list[dict[str, list[float]]], presses: int) -> None:
    """Key press -> next pair on screen, in the page: median and 95th percentile (the goal is 50 ms)."""
    assert all(len(probe["dom"]) == len(probe["frame"]) for probe in probes), probes
    assert sum(len(probe["frame"]) for probe in probes) == presses, probes
    figures = latency(probes)
    print(f"\njudging page, key press to the next pair on screen ({presses} presses): {figures}")
    assert figures.frame_median < 50, probes


def test_a_hostile_document_renders_as_text_and_a_long_one_whole(
    browser: Any, servers: list[PageServer], pooled: tuple[Path, Path, list[tuple[str, str]]]
) -> None:
    golden_path, sheet, order = pooled
    serve(browser, servers, sheet, "--golden", golden_path, total=len(order))
    hostile = next(i for i, (_, doc) in enumerate(order) if doc == HOSTILE_DOC)
    keys(browser, *["\ue014"] * hostile)  # ArrowRight: skip to it
    at_pair(browser, hostile + 1, len(order))
    assert text(browser, "text") == HOSTILE
    assert browser.execute_script("return document.querySelectorAll('#text *').length;") == 0
    assert browser.execute_script("return document.images.length;") == 0
    assert browser.execute_script("return window.pwned;") is None
    long = next(i for i, (_, doc) in enumerate(order) if doc == LONG_DOC)
    keys(browser, *(["\ue014"] * (long - hostile) if long > hostile else ["\ue012"] * (hostile - long)))
    at_pair(browser, long + 1, len(order))
    shown = text(browser, "text")
    assert len(shown) > 20_000 and shown.endswith(
        "Sentence 399 of a long help page about parcels and their labels."
    )
    # the grade keys stay in view below a text longer than the window
    assert browser.execute_script(
        "const r = document.getElementById('grades').getBoundingClientRect(); return r.bottom <= innerHeight;"
    )
    # no grade was given: skipping writes nothing
    assert not any(grades_of(sheet).values())
    # and nothing was refused or blocked (a script the policy stopped, a request without the token)
    assert [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"] == []


def test_a_page_without_the_token_is_refused_and_so_are_its_requests(
    browser: Any, servers: list[PageServer], pooled: tuple[Path, Path, list[tuple[str, str]]]
) -> None:
    golden_path, sheet, order = pooled
    server = serve(browser, servers, sheet, "--golden", golden_path, total=len(order))
    browser.get(f"http://127.0.0.1:{server.port}/")
    assert "forbidden" in browser.find_element("tag name", "body").text
    # a script on another page of this origin without the token cannot post a grade either
    status = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/api/mark', {method: 'POST', headers: {'Content-Type': 'application/json'},"
        " body: JSON.stringify({position: 0, grade: '2'})}).then((r) => done(r.status));"
    )
    assert status == 403
    browser.get(f"http://localhost:{server.port}/{'x' * len(server.token)}/")
    assert "forbidden" in browser.find_element("tag name", "body").text
    assert not any(grades_of(sheet).values())


def test_two_tabs_on_one_sheet_keep_each_others_grades(
    browser: Any, servers: list[PageServer], pooled: tuple[Path, Path, list[tuple[str, str]]]
) -> None:
    golden_path, sheet, order = pooled
    total = len(order)
    url = serve(browser, servers, sheet, "--golden", golden_path, total=total).url
    first = browser.current_window_handle
    browser.switch_to.new_window("tab")
    try:
        browser.get(url)
        at_pair(browser, 1, total)  # the second tab opens where the first is: nothing is graded yet
        keys(browser, "\ue014", "\ue014", "\ue014", "\ue014", "\ue014", "2", "2")  # pairs 6 and 7
        saved(browser)
    finally:
        browser.close()
        browser.switch_to.window(first)
    keys(browser, "0", "1", "0")  # pairs 1, 2, 3 in the first tab, which never saw the other's grades
    saved(browser)
    assert {pair: grade for pair, grade in grades_of(sheet).items() if grade} == {
        order[0]: "0",
        order[1]: "1",
        order[2]: "0",
        order[5]: "2",
        order[6]: "2",
    }
    # the first tab learnt of the other's grades from the sheet: 5 done, and the next pair is the 4th
    assert text(browser, "done") == f"5 of {total} done"
    at_pair(browser, 4, total)


def test_the_calibration_round_comes_first_says_when_it_is_done_and_feeds_agreement(
    browser: Any, servers: list[PageServer], tmp_path: Path
) -> None:
    golden_path = write_judging_set(tmp_path)
    ana, ben, own = write_calibration_sheets(golden_path, tmp_path, shared=6)
    calibration_pairs = in_order(ana)
    own_pairs = [pair for pair in in_order(own) if pair not in calibration_pairs]
    total = len(calibration_pairs) + len(own_pairs)
    serve(browser, servers, own, "--golden", golden_path, "--calibration", ana, "--judge", "ana", total=total)
    assert "Calibration: 0 of 6 shared pairs graded" in text(browser, "calibration")
    keys(browser, "2", "0", "1", "0", "1")
    at_pair(browser, 6, total)
    assert text(browser, "pause") and browser.execute_script(
        "return document.getElementById('pause').hidden;"
    )
    keys(browser, "0")
    wait_for(browser, "document.getElementById('pause').hidden", False)
    assert text(browser, "pause-command") == "embeval agreement calibration-ana.csv OTHER-JUDGES-COPY.csv"
    keys(browser, "2")  # no grade while the pause is shown
    keys(browser, "\ue007")  # Enter: go on with the own sheet
    wait_for(browser, "document.getElementById('pause').hidden", True)
    at_pair(browser, 7, total)
    assert "Calibration done: all 6 shared pairs graded" in text(browser, "calibration")
    keys(browser, "1")
    saved(browser)
    assert [row["grade"] for row in sheet_cells(ana)] == ["2", "0", "1", "0", "1", "0"]
    # a calibration pair that is on the own sheet too got the same grade there
    on_both = [pair for pair in calibration_pairs if pair in in_order(own)]
    assert on_both, "the split sheet holds some of the sample"
    assert all(grades_of(own)[pair] == grades_of(ana)[pair] for pair in on_both)
    assert grades_of(own)[own_pairs[0]] == "1"
    # the other judge's copy, graded in a spreadsheet: agreement reads both as it always has
    rows = sheet_cells(ben)
    first_ana = sheet_grades(read_sheet(ana))
    ben_sheet = tmp_path / "calibration-ben.csv"
    with ben_sheet.open("w", encoding="utf-8", newline="") as handle:
        import csv

        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows([{**row, "grade": "0", "judge": "ben"} for row in rows])
    result = agreement(first_ana, sheet_grades(read_sheet(ben_sheet)))
    assert result.n == 6 and result.only_first == result.only_second == 0


def test_undo_skip_and_a_note_by_keys(
    browser: Any, servers: list[PageServer], pooled: tuple[Path, Path, list[tuple[str, str]]]
) -> None:
    golden_path, sheet, order = pooled
    total = len(order)
    serve(browser, servers, sheet, "--golden", golden_path, "--judge", "ana", total=total)
    keys(browser, "2", "1")
    at_pair(browser, 3, total)
    keys(browser, "u")  # the 1 is taken back, and its pair is on screen again
    at_pair(browser, 2, total)
    assert "not graded" in text(browser, "where")
    keys(browser, "s", "s")  # skipped: nothing written
    at_pair(browser, 4, total)
    keys(browser, "n", "the title says more than the text", "\ue007", "0")  # a note, Enter, then a grade
    at_pair(browser, 5, total)
    saved(browser)
    rows = {(row["query_id"], row["doc_id"]): row for row in sheet_cells(sheet)}
    assert [(rows[order[i]]["grade"], rows[order[i]]["notes"]) for i in range(4)] == [
        ("2", ""),
        ("", ""),
        ("", ""),
        ("0", "the title says more than the text"),
    ]
    # the skipped pairs come round again once the rest is graded: after the last pair, the first ungraded
    keys(browser, *["\ue014"] * (total - 5))  # to the last pair
    at_pair(browser, total, total)
    keys(browser, "1")
    at_pair(browser, 2, total)
