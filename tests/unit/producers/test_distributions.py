"""An installed distribution's version comes from its metadata; one that is not installed has none."""

from __future__ import annotations

from importlib.metadata import version

from assetbus.producers.distributions import installed_version


def test_an_installed_distribution_has_its_metadata_version() -> None:
    assert installed_version("assetbus-sdk") == version("assetbus-sdk")
    assert installed_version("pydantic") == version("pydantic")


def test_a_distribution_that_is_not_installed_has_none() -> None:
    assert installed_version("assetbus-no-such-distribution") is None
