#!/usr/bin/env bash
# The API reference, generated with Doxygen from the public headers and docs/ (docs/Doxyfile).
#   scripts/docs.sh          # build/docs/html/index.html
#   scripts/docs.sh OUT      # OUT/html/index.html
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --docs
out=${1:-build/docs}
mkdir -p "$out"
version=$(sed -n 's/^project(ember VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
EMBER_DOCS_OUT="$out" EMBER_VERSION="$version" doxygen docs/Doxyfile
warnings=$(grep -c "warning:" "$out/warnings.txt" || true)
echo "docs.sh: $out/html/index.html ($warnings warnings, listed in $out/warnings.txt)"
