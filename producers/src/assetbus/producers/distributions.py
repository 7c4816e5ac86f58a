"""Installed distributions' versions, read from their metadata: `assetbus --version`, the services' build info
on `/metrics`, the Airflow provider's info and the Airflow version check."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def installed_version(distribution: str) -> str | None:
    """The installed version of `distribution`; None when it is not installed (or a source tree has no metadata)."""
    try:
        return version(distribution)
    except PackageNotFoundError:
        return None
