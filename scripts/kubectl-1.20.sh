#!/usr/bin/env bash
# kubectl-1.20.sh — make Debian's kubectl 1.20 (kustomize v2.0.3) exist, print its path (last line).
#
# The manifests tests build `kinrun manifests` output with the kustomize that Debian's
# `kubernetes-client` (1.20.2) carries. The package conflicts with other kubectl packages a
# machine may have, so it is not installed: `apt-get download` + `dpkg-deb -x` into
# ${KINRUN_KUBECTL_CACHE:-/var/cache/kinrun/kubectl-1.20}. Idempotent; progress on stderr.
set -euo pipefail
exec 3>&1 1>&2
CACHE="${KINRUN_KUBECTL_CACHE:-/var/cache/kinrun/kubectl-1.20}"
if [[ -x "$CACHE/kubectl" ]]; then echo "$CACHE/kubectl" >&3; exit 0; fi
command -v apt-get >/dev/null || { echo "kubectl-1.20: apt-get not found" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
apt-get download kubernetes-client >/dev/null 2>&1 || { apt-get update -qq && apt-get download kubernetes-client; }
dpkg-deb -x kubernetes-client_*.deb root
mkdir -p "$CACHE"
install -m 0755 root/usr/bin/kubectl "$CACHE/kubectl"
echo "kubectl-1.20: $("$CACHE/kubectl" version --client --short 2>/dev/null || true)" >&2
echo "$CACHE/kubectl" >&3
