"""CLI options made from settings models, so that each option, its help and its default are written once.

`@settings_options(PersisterConfig, LogSettings, skip=CONNECTION)` gives a typer command one option per
field (`max_records` → `--max-records`), with the field's description as help and the model's own
environment variable (`ASSETBUS_PERSISTER_MAX_RECORDS`). The CLI loads `.env` into the environment at
start, so an option comes from the command line, else the environment, else `.env`, else the field's
default; a value that is nowhere given is not passed at all and the model keeps its default.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Collection, Mapping
from typing import Any, Literal, TypeVar, cast

import typer
from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from assetbus.consumers.settings import ENV_FILE

__all__ = ["CONNECTION", "LogSettings", "build", "env_name", "settings_options"]

M = TypeVar("M", bound=BaseSettings)

CONNECTION = frozenset({"bootstrap_servers", "kafka", "database_url", "token_secret", "token_jwks", "topics",
                        "create_topics"})
"""Fields every service model takes from the shared `assetbus.settings.Settings`, not from options."""


class LogSettings(BaseSettings):
    """How a service logs (`ASSETBUS_LOG_LEVEL`, `ASSETBUS_LOG_FORMAT`)."""

    model_config = SettingsConfigDict(env_prefix="ASSETBUS_", env_file=ENV_FILE, extra="ignore", frozen=True)

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(default="INFO", description="Logging level.")
    log_format: Literal["kv", "json"] = Field(default="kv", description="Log lines as `kv` (key=value) or `json`.")


def env_name(model: type[BaseSettings], field: str) -> str:
    return f"{model.model_config.get('env_prefix') or ''}{field}".upper()


def _help(model: type[BaseSettings], name: str) -> str:
    field = model.model_fields[name]
    if field.is_required():
        return f"{field.description or ''} (required)"
    default = field.get_default(call_default_factory=False)
    shown = "unset" if default is None or default == "" else str(default)  # "": derived (the help says how)
    return f"{field.description or ''} (default: {shown})"


def _annotation(model: type[BaseSettings], name: str) -> Any:
    """The field's type as typer takes it: a `tuple[str, ...]` is a repeatable option (`list[str]`)."""
    annotation = model.model_fields[name].annotation
    if typing.get_origin(annotation) is tuple and typing.get_args(annotation)[1:] == (Ellipsis,):
        return list[typing.get_args(annotation)[0]]  # type: ignore[misc]
    return cast(Any, annotation)


def _declared(model: type[BaseSettings], name: str) -> tuple[str, ...]:
    """The option's own name when the field sets one (`json_schema_extra={"option": "--dag"}`)."""
    extra = model.model_fields[name].json_schema_extra
    option = extra.get("option") if isinstance(extra, dict) else None
    return (str(option),) if option else ()


def settings_options(*models: type[BaseSettings], skip: Collection[str] = CONNECTION
                     ) -> Callable[[Callable[[dict[str, Any]], None]], Callable[..., None]]:
    """Decorate `command(options)`: `options` holds only the values given on the command line."""
    owners: dict[str, type[BaseSettings]] = {}
    for model in models:
        for name in model.model_fields:
            if name not in skip:
                owners.setdefault(name, model)

    def decorate(command: Callable[[dict[str, Any]], None]) -> Callable[..., None]:
        parameters = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=_annotation(model, name) | None,
                              default=typer.Option(None, *_declared(model, name), help=_help(model, name),
                                                   show_default=False, envvar=env_name(model, name),
                                                   show_envvar=True))
            for name, model in owners.items()
        ]

        @functools.wraps(command)
        def wrapper(**values: Any) -> None:
            command({name: value for name, value in values.items() if value is not None})

        wrapper.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        del wrapper.__wrapped__  # typer must read the signature above, not the command's
        return wrapper

    return decorate


def build(model: type[M], options: Mapping[str, Any], **given: Any) -> M:
    """`model` from `given` (connection values) and the options it owns; invalid values exit with one line."""
    mine = {name: value for name, value in options.items() if name in model.model_fields}
    try:
        return model(**given, **mine)
    except ValidationError as error:
        from assetbus.cli.common import fail

        problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'settings'} ({env_name(model, str(e['loc'][0])) if e['loc'] else ''})"
        f": {e['msg']}" for e in error.errors()
    )
    fail(f"invalid settings: {problems}", code=2)
