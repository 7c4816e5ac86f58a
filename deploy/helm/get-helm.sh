#!/usr/bin/env bash
# Prints the path of a helm binary for the chart's tests (`make helm`, run by `make test`'s setup).
# Helm is built once from its Go module (helm.sh/helm/v3, through the Go module proxy) into
# $ASSETBUS_HOME/helm/<version>/ (default ~/.cache/assetbus); later calls print the cached path at once.
# About two minutes on two cores with empty Go caches (four of CPU). Needs Go (`go` on PATH); without it, it exits 3
# with the reason, and the chart's tests skip with that reason.
set -euo pipefail
VERSION=${ASSETBUS_HELM_VERSION:-v3.22.0}
DEST="${ASSETBUS_HOME:-$HOME/.cache/assetbus}/helm/$VERSION"
if [ -x "$DEST/helm" ]; then
  echo "$DEST/helm"
  exit 0
fi
if ! command -v go >/dev/null; then
  echo "helm $VERSION is not in $DEST and Go is not installed to build it (helm.sh/helm/v3)" >&2
  exit 3
fi
echo "building helm $VERSION from its Go module into $DEST (once; about two minutes)" >&2
mkdir -p "$(dirname "$DEST")"
BUILD=$(mktemp -d "$DEST.building.XXXXXX")
chmod 755 "$BUILD"
trap 'rm -rf "$BUILD"' EXIT
# Without cgo, as Helm's own releases are built; without the compiler's optimisations (-N -l): a quarter less CPU
# to build (316 -> 238 CPU-s here), for a binary the chart's tests call a few dozen times (0.2-1.0 s each beside
# the suite, about twice the optimised binary's).
CGO_ENABLED=0 GOBIN="$BUILD" GOFLAGS=-mod=mod go install -trimpath -gcflags=all="-N -l" \
  -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$VERSION" "helm.sh/helm/v3/cmd/helm@$VERSION" >&2
"$BUILD/helm" version --short >&2
# Whole or not at all: a stopped build leaves no half binary behind, and of two builds at once the second
# finds the first one's in place.
if mv -T "$BUILD" "$DEST" 2>/dev/null; then trap - EXIT; fi
[ -x "$DEST/helm" ] || { echo "could not put helm into $DEST" >&2; exit 1; }
echo "$DEST/helm"
