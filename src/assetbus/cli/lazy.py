"""Command groups whose sub-commands are built on first use, so `assetbus --help` stays fast.

`assetbus run ...` generates its options from the services' settings models, which import the
services themselves (FastAPI, SQLAlchemy, aiokafka): building that group only when `run` is used
keeps those imports out of every other command.
"""

from __future__ import annotations

import importlib
from typing import Any

import typer
from typer.core import TyperGroup


def lazy_typer(module: str, help: str) -> typer.Typer:
    """An empty typer app standing for `module.app` until one of its commands is used."""

    class LazyGroup(TyperGroup):
        _loaded: TyperGroup | None = None

        def _group(self) -> TyperGroup:
            if self._loaded is None:
                self._loaded = typer.main.get_group(importlib.import_module(module).app)
                self.commands.update(self._loaded.commands)
            return self._loaded

        def list_commands(self, ctx: Any) -> list[str]:
            self._group()
            return super().list_commands(ctx)

        def get_command(self, ctx: Any, cmd_name: str) -> Any:
            self._group()
            return super().get_command(ctx, cmd_name)

    LazyGroup.__name__ = LazyGroup.__qualname__ = f"LazyGroup[{module}]"
    return typer.Typer(help=help, no_args_is_help=True, cls=LazyGroup)
