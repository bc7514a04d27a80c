#!/usr/bin/env bash
# Builds Jaeger v2 (cmd/jaeger), or another command of the Jaeger module such as
# its HotROD demo (examples/hotrod), from the module's source and caches the binary.
# `go install …@version` refuses the module's replace directive, so the module is
# downloaded through the Go module proxy, copied to a temporary directory and built there.
# Usage: scripts/build-jaeger.sh VERSION CACHE_DIR [PACKAGE]   (PACKAGE defaults to cmd/jaeger;
#        prints the binary's path)
set -euo pipefail
version=${1:?jaeger module version, e.g. v1.76.0}
cache=${2:?cache directory}
pkg=${3:-cmd/jaeger}
bin="$cache/$(basename "$pkg")-$version"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
mkdir -p "$cache"
dir=$(go mod download -json "github.com/jaegertracing/jaeger@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$dir" ] || { echo "build-jaeger: go mod download gave no source directory for $version" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
cp -r "$dir/." "$tmp/src"
chmod -R u+w "$tmp/src"
echo "build-jaeger: building github.com/jaegertracing/jaeger@$version $pkg (several minutes the first time)" >&2
(cd "$tmp/src" && GOFLAGS=-mod=mod go build -trimpath -o "$tmp/out" "./$pkg")
mv "$tmp/out" "$bin"
echo "$bin"
