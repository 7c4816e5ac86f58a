"""Command groups whose sub-commands are built on first use, so `assetbus --help` stays fast: the options of
`assetbus run ...` come from the services' settings models, which import the services (FastAPI, aiokafka)."""

from __future__ import annotations

import importlib
from typing import Any

import typer
from typer.core import TyperGroup


def lazy_typer(module: str, help: str) -> typer.Typer:
    """An empty typer app standing for `module.app` until one of its commands is used."""

    class LazyGroup(TyperGroup):
        def _load(self) -> None:
            if not self.commands:  # the stand-in has none of its own
                self.commands.update(typer.main.get_group(importlib.import_module(module).app).commands)

        def list_commands(self, ctx: Any) -> list[str]:
            self._load()
            return super().list_commands(ctx)

        def get_command(self, ctx: Any, cmd_name: str) -> Any:
            self._load()
            return super().get_command(ctx, cmd_name)

    LazyGroup.__name__ = LazyGroup.__qualname__ = f"LazyGroup[{module}]"
    return typer.Typer(help=help, no_args_is_help=True, cls=LazyGroup)
