"""`assetbus --version`: the versions of the installed assetbus distributions, from their metadata."""

from __future__ import annotations

import typer

DISTRIBUTIONS = ("assetbus", "assetbus-sdk", "assetbus-schemas")


def installed_versions() -> dict[str, str | None]:
    """Each assetbus distribution's installed version (None when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    found: dict[str, str | None] = {}
    for name in DISTRIBUTIONS:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def version_callback(value: bool) -> None:
    if not value:
        return
    for name, found in installed_versions().items():
        typer.echo(f"{name} {found or '(not installed)'}")
    raise typer.Exit()
