"""The `/ui` page in a real headless Chromium: the browser is sent to the sign-in page and signs in with
an operator token; after the demo's story (and one dead letter) the page shows the catalog, the runs and
what still waits; asset → event → run clicks through; the console stays clean. Screenshots the asset
page (ui.png) and a DAG's page (ui-dag.png) into a temporary folder, so a test run leaves the checkout
as it was; `make screenshots` points $ASSETBUS_SCREENSHOTS at docs/images to regenerate the docs'
pictures."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from assetbus.consumers.api.ui_auth import operator_token
from assetbus.demo.actors import DAILY_DAG, ORDERS
from assetbus.demo.story import run_demo
from assetbus.schemas import Topics
from assetbus.settings import Settings

DOCS_IMAGES = Path(__file__).resolve().parents[4] / "docs" / "images"
WAIT_S = 20


def _chrome() -> webdriver.Chrome:
    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if binary is None or driver is None:
        pytest.fail("chromium and chromium-driver are missing; `make test` installs Debian's packages (browser-deps)")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1440,900", "--hide-scrollbars"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=options)


def _docs_pictures(screenshots: Path) -> dict[str, int] | None:
    """The docs' pictures and their modification times; None when this run regenerates them."""
    if screenshots.resolve() == DOCS_IMAGES.resolve():
        return None
    return {path.name: path.stat().st_mtime_ns for path in DOCS_IMAGES.glob("*.png")}


def _size(path: Path) -> int:
    return path.stat().st_size


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    """Where the page's pictures go: $ASSETBUS_SCREENSHOTS (`make screenshots`), else this test's temp folder."""
    folder = Path(os.environ.get("ASSETBUS_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    driver = _chrome()
    try:
        yield driver
    finally:
        driver.quit()


def _settings(infra: Settings, db_url: str, topics: Topics, token_secret: str) -> Settings:
    """The demo's settings, pointed at this test's database and topic prefix."""
    settings = Settings()
    settings.conn.kafka_bootstrap_servers = infra.bootstrap_servers
    settings.conn.database_url = db_url
    settings.conn.topic_prefix = topics.prefix
    settings.security.token_secret = token_secret
    return settings


async def _send_garbage(bootstrap: str, topics: Topics) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(topics.emissions, b"{not json", key=ORDERS.name.encode())
    finally:
        await producer.stop()


def _wait_text(driver: WebDriver, testid: str, text: str) -> WebElement:
    locator = (By.CSS_SELECTOR, f'[data-testid="{testid}"]')
    WebDriverWait(driver, WAIT_S).until(ec.text_to_be_present_in_element(locator, text))
    return driver.find_element(*locator)


def _click_first(driver: WebDriver, within: str, link: str) -> str:
    """Click the first `link` (data-testid) inside the element `within`; returns the link's text."""
    locator = (By.CSS_SELECTOR, f'[data-testid="{within}"] [data-testid="{link}"]')
    element = WebDriverWait(driver, WAIT_S).until(ec.element_to_be_clickable(locator))
    text = element.text
    element.click()
    return text


def _sign_in(driver: WebDriver, url: str, token: str) -> None:
    """Open /ui unsigned, land on the sign-in page, paste the operator token and submit it."""
    driver.get(f"{url}/ui")
    WebDriverWait(driver, WAIT_S).until(ec.url_to_be(f"{url}/ui/login"))
    driver.find_element(By.CSS_SELECTOR, '[data-testid="login-token"]').send_keys(token)
    driver.find_element(By.CSS_SELECTOR, '[data-testid="login-submit"]').click()
    WebDriverWait(driver, WAIT_S).until(ec.url_to_be(f"{url}/ui"))
    cookie = driver.get_cookie("assetbus_ui")
    assert cookie is not None and cookie["httpOnly"] and cookie["sameSite"] == "Strict"


def _walk_the_page(driver: webdriver.Chrome, url: str, token: str, images: Path) -> list[str]:
    """The clicks of an operator; returns what went wrong in the console."""
    _sign_in(driver, url, token)
    assets = _wait_text(driver, "assets", ORDERS.name)
    assert "demo.incidents" in assets.text
    _wait_text(driver, "feed", ORDERS.name)

    assets.find_element(By.LINK_TEXT, ORDERS.name).click()
    partitions = _wait_text(driver, "partitions", "batch-")
    assert "ingest_orders" in partitions.text and "load_orders" in partitions.text  # provenance of each partition
    _wait_text(driver, "asset-events", "batch-")
    driver.save_screenshot(str(images / "ui.png"))

    event_id = _click_first(driver, "partitions", "event-link")
    _wait_text(driver, "event-detail", ORDERS.uri)
    run_id = _click_first(driver, "event-runs", "run-link")
    detail = _wait_text(driver, "run-detail", "success")
    assert "demo.orders_per_batch" in detail.text
    triggering = _wait_text(driver, "run-events", event_id)
    assert run_id in driver.find_element(By.TAG_NAME, "h1").text and ORDERS.name in triggering.text

    driver.get(f"{url}/ui#/dags")
    dags = _wait_text(driver, "dags", DAILY_DAG)
    assert "demo.incident_triage" in dags.text and "success" in dags.text
    driver.get(f"{url}/ui#/dags/{DAILY_DAG}")
    waiting = _wait_text(driver, "waiting", "2026-10-02")
    assert "demo.orders 2/24 hours" in waiting.text
    _wait_text(driver, "runs", "success")
    driver.save_screenshot(str(images / "ui-dag.png"))

    driver.get(f"{url}/ui#/lag")
    _wait_text(driver, "lag", "-persister")
    driver.get(f"{url}/ui#/dead-letters")
    _wait_text(driver, "dead-letters", "not_json")
    # selenium's ChromiumDriver.get_log has no annotations (a list of {"level", "message", ...} entries)
    logs: list[dict[str, Any]] = driver.get_log("browser")  # type: ignore[no-untyped-call]
    return [entry["message"] for entry in logs if entry["level"] in ("SEVERE", "WARNING")]


async def test_the_page_shows_the_demo_and_clicks_through_asset_event_run(
        infra: Settings, db_url: str, topics: Topics, token_secret: str, api_url: str, browser: webdriver.Chrome,
        readiness_cleanup: None, screenshots: Path) -> None:
    docs_before = _docs_pictures(screenshots)
    await _send_garbage(infra.bootstrap_servers, topics)  # the demo's persister dead-letters it
    result = await run_demo(_settings(infra, db_url, topics, token_secret), lambda actor, text: None)
    assert result.rows, "the demo told its story"

    token = operator_token(token_secret, "browser-test")
    console = await asyncio.to_thread(_walk_the_page, browser, api_url, token, screenshots)

    assert console == []
    assert _size(screenshots / "ui.png") > 10_000
    assert _size(screenshots / "ui-dag.png") > 10_000
    assert _docs_pictures(screenshots) == docs_before, "a test run must not rewrite the docs' pictures"
