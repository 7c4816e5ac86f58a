"""The operators' web page (`/ui`), shipped as static files in the package: no build step, no Node."""
