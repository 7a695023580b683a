#!/usr/bin/env bash
# build.sh — build the client-go contender (main.go beside this script), print the binary's path.
#
# Contract (as scripts/envtest-assets.sh): the binary's path is the LAST line on stdout; progress
# and errors go to stderr; exit status 1 with a one-line reason when Go or the tree is missing.
#
# What it builds against: the client-go vendored in Debian's `kubernetes` source package
# (v1.20.2), the tree scripts/envtest-assets.sh unpacks as $GOPATH/src/k8s.io/kubernetes and
# keeps when run with KINRUN_ENVTEST_KEEP_WORK=1. Go 1.19 from Debian (`golang-go`) in GOPATH
# mode (GO111MODULE=off): main.go is copied into the tree (kinrun-bench/clientgo/, a folder of
# ours) so that the tree's vendor/ is visible to it. Nothing of client-go, nor the binary, is in
# this repository.
#
# Environment knobs:
#   KINRUN_K8S_TREE      the k8s.io/kubernetes tree (default: the envtest build's work tree)
#   KINRUN_BENCH_CACHE   where the binary goes (default /var/cache/kinrun/bench)
#   GOCACHE              default: the envtest build's Go cache when it exists (the vendored
#                        client-go packages are then already compiled), else $KINRUN_BENCH_CACHE/gocache
set -euo pipefail

exec 3>&1 1>&2 # fd 3 = the real stdout, reserved for the final path line
log() { printf 'clientgo/build.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK="${KINRUN_ENVTEST_WORK:-/var/cache/kinrun/envtest.build}"
K8S="${KINRUN_K8S_TREE:-$WORK/gopath/src/k8s.io/kubernetes}"
CACHE="${KINRUN_BENCH_CACHE:-/var/cache/kinrun/bench}"
BIN="$CACHE/clientgo-bench"

command -v go >/dev/null || die "no 'go' on PATH (Debian: apt-get install golang-go; scripts/envtest-assets.sh installs it)"
[[ -d "$K8S/vendor/k8s.io/client-go/tools/cache" ]] ||
    die "no k8s.io/kubernetes tree with vendored client-go at $K8S (run scripts/envtest-assets.sh with KINRUN_ENVTEST_KEEP_WORK=1, or set KINRUN_K8S_TREE)"
[[ "$K8S" == */src/k8s.io/kubernetes ]] || die "$K8S is not laid out as \$GOPATH/src/k8s.io/kubernetes"

GOPATH_DIR="${K8S%/src/k8s.io/kubernetes}"
if [[ -z "${GOCACHE:-}" ]]; then
    if [[ -d "$WORK/gocache" ]]; then GOCACHE="$WORK/gocache"; else GOCACHE="$CACHE/gocache"; fi
fi
VERSION="$(head -n1 "$K8S/debian/changelog" 2>/dev/null | sed -n 's/^kubernetes (\([^)]*\)).*/\1/p')"
mkdir -p "$CACHE" "$K8S/kinrun-bench/clientgo"
install -m 0644 "$HERE/main.go" "$K8S/kinrun-bench/clientgo/main.go"

log "go build (GOPATH=$GOPATH_DIR, tree ${VERSION:-unknown}, $(go version | awk '{print $3}'))"
cd "$K8S/kinrun-bench/clientgo"
GOPATH="$GOPATH_DIR" GOCACHE="$GOCACHE" GO111MODULE=off CGO_ENABLED=0 GOFLAGS= \
    go build -o "$BIN.tmp" -ldflags "-X main.treeVersion=${VERSION:-unknown}" .
mv -f "$BIN.tmp" "$BIN"
log "built $BIN"
printf '%s\n' "$BIN" >&3
