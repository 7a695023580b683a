#!/usr/bin/env bash
# envtest-assets.sh — make a KUBEBUILDER_ASSETS folder (kube-apiserver + etcd) exist, print its path.
#
# Contract: the folder's path is the LAST line on stdout; every progress message goes to stderr,
# so callers can do  `export KUBEBUILDER_ASSETS="$(scripts/envtest-assets.sh | tail -n1)"`.
#
# Resolution order:
#   1. $KUBEBUILDER_ASSETS, if it already holds executable `kube-apiserver` and `etcd`;
#   2. the cache folder ${KINRUN_ENVTEST_CACHE:-/var/cache/kinrun/envtest}, if both binaries are there;
#   3. otherwise build them (Debian 12 only, as root, needs the Debian package mirror):
#        - etcd 3.4 from the `etcd-server` package (binary copied as is);
#        - kube-apiserver v1.20.2 from Debian's source package `kubernetes` (its tarball carries
#          vendor/), with vendor/github.com/modern-go/reflect2 replaced by Debian's 1.0.2 copy
#          (1.0.1 crashes under Go >= 1.18 with "fatal error: fault"), `make generated_files`,
#          then `GO111MODULE=off go build ./cmd/kube-apiserver`.
#      Cold: about 12-15 minutes on two cores. The source tree and Go build cache are kept in
#      ${KINRUN_ENVTEST_WORK:-$CACHE.build} so a failed build can be resumed.
#
# Idempotent and safe to re-run (and to run concurrently: a flock on the cache serialises runs).
# Environment knobs: KINRUN_ENVTEST_CACHE, KINRUN_ENVTEST_WORK, KINRUN_ENVTEST_KEEP_WORK=1
# (keep the ~1.5 GB work tree after a successful build; default: removed).
set -euo pipefail

exec 3>&1 1>&2 # fd 3 = the real stdout, reserved for the final path line

log() { printf 'envtest-assets: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

has_assets() { [[ -x "$1/kube-apiserver" && -x "$1/etcd" ]]; }

finish() { log "assets ready in $1"; printf '%s\n' "$1" >&3; exit 0; }

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]] && has_assets "$KUBEBUILDER_ASSETS"; then
    finish "$(cd "$KUBEBUILDER_ASSETS" && pwd)"
fi

CACHE="${KINRUN_ENVTEST_CACHE:-/var/cache/kinrun/envtest}"
WORK="${KINRUN_ENVTEST_WORK:-${CACHE%/}.build}"
K8S_SRC_PKG=kubernetes
REFLECT2_PKG=golang-github-modern-go-reflect2-dev
# gcc/libc6-dev: kube's hack/ scripts build their code generators with cgo left at Go's
# default; openssl: EnvtestServer makes service-account keys with it.
PACKAGES=(etcd-server golang-go rsync dpkg-dev make gcc libc6-dev "$REFLECT2_PKG" ca-certificates
    openssl)

if has_assets "$CACHE"; then finish "$CACHE"; fi

[[ "$(id -u)" == 0 ]] || die "no assets in $CACHE and building them needs root (apt-get); run as root or set KUBEBUILDER_ASSETS"
command -v apt-get >/dev/null || die "apt-get not found: the build supports Debian 12 only"

# Serialise concurrent builds; re-check after taking the lock (another run may have finished).
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
if has_assets "$CACHE"; then finish "$CACHE"; fi

START=$SECONDS
export DEBIAN_FRONTEND=noninteractive

pkg_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

install_packages() {
    local missing=() p
    for p in "${PACKAGES[@]}"; do pkg_installed "$p" || missing+=("$p"); done
    if ((${#missing[@]})); then
        log "installing ${missing[*]}"
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}"
    fi
}

# The mirror URI the system already uses for bookworm (deb822 or one-line format).
debian_mirror() {
    local uri
    uri="$(grep -hs -A3 '^Types:.*deb' /etc/apt/sources.list.d/*.sources |
        grep -m1 -o 'URIs: *http[^ ]*debian/\?$' | sed 's/URIs: *//' || true)"
    [[ -n "$uri" ]] || uri="$(grep -hs -o '^deb  *\(\[[^]]*\] \)\?http[^ ]*debian/\? bookworm ' \
        /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $(NF-1)}' | head -n1 || true)"
    printf '%s\n' "${uri:-http://deb.debian.org/debian}"
}

# Make `apt-get source` possible: add a deb-src entry for bookworm unless one exists.
ensure_deb_src() {
    if grep -qsE '^deb-src .* bookworm |^Types:.*deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/*; then
        return
    fi
    local mirror
    mirror="$(debian_mirror)"
    log "adding a deb-src entry for bookworm ($mirror)"
    cat >/etc/apt/sources.list.d/kinrun-deb-src.sources <<EOF
Types: deb-src
URIs: $mirror
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    apt-get update -qq
}

# Fetch and unpack Debian's kubernetes source into $GOPATH/src/k8s.io/kubernetes (once).
fetch_source() {
    local dest="$GOPATH/src/k8s.io/kubernetes"
    if [[ -f "$dest/.kinrun-source-complete" ]]; then
        log "reusing source tree $dest"
        return
    fi
    rm -rf "$WORK/apt-source" "$dest"
    mkdir -p "$WORK/apt-source" "$GOPATH/src/k8s.io"
    log "apt-get source $K8S_SRC_PKG (large: the tarball carries vendor/)"
    if ! (cd "$WORK/apt-source" && apt-get source -qq "$K8S_SRC_PKG"); then
        log "apt-get source failed; refreshing the package lists once and retrying"
        apt-get update -qq
        (cd "$WORK/apt-source" && apt-get source -qq "$K8S_SRC_PKG")
    fi
    local tree
    tree="$(find "$WORK/apt-source" -mindepth 1 -maxdepth 1 -type d -name "$K8S_SRC_PKG-*" | head -n1)"
    [[ -n "$tree" && -d "$tree/cmd/kube-apiserver" ]] || die "no kubernetes tree in $WORK/apt-source"
    mv "$tree" "$dest"
    rm -rf "$WORK/apt-source"
    touch "$dest/.kinrun-source-complete"
}

# Replace the vendored reflect2 v1.0.1 with Debian's 1.0.2 (no tests).
replace_reflect2() {
    local src
    src="$(dpkg -L "$REFLECT2_PKG")"
    src="$(grep -m1 '/github.com/modern-go/reflect2$' <<<"$src")" ||
        die "cannot find reflect2 sources in $REFLECT2_PKG"
    log "vendoring reflect2 from $src"
    rsync -a --delete --exclude '*_test.go' "$src/" "$K8S/vendor/github.com/modern-go/reflect2/"
}

build_apiserver() {
    cd "$K8S"
    if [[ ! -f .kinrun-generated ]]; then
        log "make generated_files (a few minutes)"
        make generated_files >&2
        touch .kinrun-generated
    fi
    log "go build ./cmd/kube-apiserver (several minutes)"
    GO111MODULE=off go build -o "$WORK/kube-apiserver" ./cmd/kube-apiserver
    cd - >/dev/null
}

install_binaries() {
    local etcd_bin
    etcd_bin="$(dpkg -L etcd-server)"
    etcd_bin="$(grep -m1 -E '/s?bin/etcd$' <<<"$etcd_bin")" || die "no etcd binary in etcd-server"
    install -m 0755 "$etcd_bin" "$CACHE/etcd.tmp"
    install -m 0755 "$WORK/kube-apiserver" "$CACHE/kube-apiserver.tmp"
    mv -f "$CACHE/etcd.tmp" "$CACHE/etcd"
    mv -f "$CACHE/kube-apiserver.tmp" "$CACHE/kube-apiserver" # last: its presence marks completion
}

install_packages
ensure_deb_src
mkdir -p "$WORK"
export GOPATH="$WORK/gopath" GOCACHE="$WORK/gocache" GO111MODULE=off CGO_ENABLED=0
K8S="$GOPATH/src/k8s.io/kubernetes"
fetch_source
replace_reflect2
build_apiserver
install_binaries
"$CACHE/kube-apiserver" --version >&2 || true
"$CACHE/etcd" --version >&2 || true
[[ "${KINRUN_ENVTEST_KEEP_WORK:-0}" == 1 ]] || rm -rf "$WORK"
log "built in $(((SECONDS - START) / 60))m$(((SECONDS - START) % 60))s"
finish "$CACHE"
