"""The `assetbus` command line."""

from assetbus.cli.main import app

__all__ = ["app"]
