"""`assetbus --version`: the versions of the installed assetbus distributions, from their metadata."""

from __future__ import annotations

import typer

DISTRIBUTIONS = ("assetbus", "assetbus-sdk", "assetbus-schemas")


def installed_versions() -> dict[str, str | None]:
    """Each assetbus distribution's installed version (None when it is not installed)."""
    from assetbus.producers.distributions import installed_version

    return {name: installed_version(name) for name in DISTRIBUTIONS}


def version_callback(value: bool) -> None:
    if not value:
        return
    for name, found in installed_versions().items():
        typer.echo(f"{name} {found or '(not installed)'}")
    raise typer.Exit()
