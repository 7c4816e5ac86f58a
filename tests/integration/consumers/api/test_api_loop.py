"""The API's loop (uvicorn's, not the CLI's) gets the services' exception handler when its lifespan starts: a
failed TLS connection is reported once, by the client that made it."""

from __future__ import annotations

import asyncio

from fastapi import FastAPI

from assetbus.consumers.observe.logs import handle_loop_error


async def test_the_apis_lifespan_installs_the_services_loop_exception_handler(api_app: FastAPI) -> None:
    assert asyncio.get_running_loop().get_exception_handler() is handle_loop_error
