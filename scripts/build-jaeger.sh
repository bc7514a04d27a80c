#!/usr/bin/env bash
# Builds Jaeger v2 (cmd/jaeger) from its Go module source and caches the binary.
# `go install …@version` refuses the module's replace directive, so the module is
# downloaded through the Go module proxy, copied to a temporary directory and built there.
# Usage: scripts/build-jaeger.sh VERSION CACHE_DIR   (prints the binary's path)
set -euo pipefail
version=${1:?jaeger module version, e.g. v1.76.0}
cache=${2:?cache directory}
bin="$cache/jaeger-$version"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
mkdir -p "$cache"
dir=$(go mod download -json "github.com/jaegertracing/jaeger@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$dir" ] || { echo "build-jaeger: go mod download gave no source directory for $version" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
cp -r "$dir/." "$tmp/src"
chmod -R u+w "$tmp/src"
echo "build-jaeger: building github.com/jaegertracing/jaeger@$version cmd/jaeger (several minutes the first time)" >&2
(cd "$tmp/src" && GOFLAGS=-mod=mod go build -trimpath -o "$tmp/jaeger" ./cmd/jaeger)
mv "$tmp/jaeger" "$bin"
echo "$bin"
