"""assetbus: the CLI and the local-infrastructure launcher around the pipeline packages."""

__all__ = ["__version__"]

__version__ = "0.1.0"
