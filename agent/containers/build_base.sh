#!/usr/bin/env bash
# Build the offline sandbox base image (codebox-base:bookworm) without any
# container registry: debootstrap a minimal Debian bookworm with python3, git,
# ripgrep and pytest from Debian's own packages, strip it, and `docker import` it.
#
# Usage: bash agent/containers/build_base.sh [--force] [--tag TAG] [--packages LIST]
#   --force          rebuild even if the image already exists (default: reuse it)
#   --tag TAG        image tag (default: codebox-base:bookworm)
#   --packages LIST  more Debian packages, comma-separated (bullseye's python3-distutils: uv needs it on 3.9)
#
# Environment:
#   CODEBOX_DEBIAN_MIRROR  Debian mirror URL; default: the first Debian mirror in
#                          this host's apt sources (/etc/apt/sources.list.d/*.sources
#                          `URIs:` or /etc/apt/sources.list).
#   CODEBOX_SUITE          Debian suite (default: bookworm).
#   TMPDIR                 where the temporary root is built (default: /var/tmp;
#                          must not be mounted noexec or nodev).
#
# Needs root (debootstrap), a running Docker daemon, and apt-get if debootstrap
# is not installed yet. The temporary build tree is always removed.
set -euo pipefail

TAG="codebox-base:bookworm"
SUITE="${CODEBOX_SUITE:-bookworm}"
FORCE=0
PACKAGES="python3,git,ripgrep,python3-pytest"

die() { echo "build_base: error: $*" >&2; exit 1; }
log() { echo "build_base: $*"; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

while [ $# -gt 0 ]; do
    case "$1" in
        --force) FORCE=1 ;;
        --tag) [ $# -ge 2 ] || die "--tag needs a value"; TAG="$2"; shift ;;
        --packages) [ $# -ge 2 ] || die "--packages needs a value"; PACKAGES="$PACKAGES,$2"; shift ;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $1 (try --help)" ;;
    esac
    shift
done

T_START="$(now)"

command -v docker >/dev/null 2>&1 || die "the docker CLI is not installed"
docker info >/dev/null 2>&1 \
    || die "Docker is not answering: start the daemon (e.g. 'systemctl start docker' or 'service docker start') and check access to its socket"

if [ "$FORCE" -eq 0 ] && docker image inspect "$TAG" >/dev/null 2>&1; then
    log "image $TAG already exists; reusing it (pass --force to rebuild)"
    exit 0
fi

[ "$(id -u)" -eq 0 ] || die "debootstrap needs root: run this script as root (e.g. with sudo)"

# --- the Debian mirror: env override, else the host's apt sources -------------
find_mirror() {
    local f uri
    # deb822 stanzas: the first URIs: of a stanza whose Suites: has the plain suite.
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        uri="$(awk -v suite="$SUITE" '
            function flush() {
                if (uris != "" && (" " suites " ") ~ (" " suite " ")) { split(uris, u, " "); print u[1]; found = 1; exit }
                uris = ""; suites = ""
            }
            /^[[:space:]]*$/ { flush(); next }
            /^[[:space:]]*#/ { next }
            tolower($1) == "uris:"   { $1 = ""; uris = $0 }
            tolower($1) == "suites:" { $1 = ""; suites = $0 }
            END { if (!found) flush() }
        ' "$f")"
        if [ -n "$uri" ]; then echo "$uri"; return 0; fi
    done
    # one-line format: deb [options] URI suite components...
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        uri="$(awk -v suite="$SUITE" '
            $1 == "deb" {
                i = 2
                if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                if ($(i + 1) == suite) { print $i; exit }
            }
        ' "$f")"
        if [ -n "$uri" ]; then echo "$uri"; return 0; fi
    done
    return 1
}

MIRROR="${CODEBOX_DEBIAN_MIRROR:-}"
if [ -z "$MIRROR" ]; then
    MIRROR="$(find_mirror)" \
        || die "no Debian mirror for '$SUITE' found in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list; set CODEBOX_DEBIAN_MIRROR to a Debian mirror URL"
fi
log "suite $SUITE, mirror from $([ -n "${CODEBOX_DEBIAN_MIRROR:-}" ] && echo CODEBOX_DEBIAN_MIRROR || echo 'host apt sources'): $MIRROR"

# --- debootstrap ---------------------------------------------------------------
if ! command -v debootstrap >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 \
        || die "debootstrap is not installed and there is no apt-get to install it; install debootstrap first"
    log "installing debootstrap with apt-get"
    T0="$(now)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
    log "debootstrap installed in $(elapsed "$T0") s"
fi

# --- temporary build tree, always removed ----------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/var/tmp}/codebox-base.XXXXXX")"
ROOT="$WORK/root"
cleanup() {
    # debootstrap mounts /proc, /sys and (inside a container) /dev under the
    # target; unmount anything left there before deleting, deepest first, and
    # never let rm cross into another filesystem.
    local m
    awk -v w="$WORK/" 'index($2, w) == 1 { print $2 }' /proc/self/mounts | sort -r | while read -r m; do
        umount -l "$m" 2>/dev/null || true
    done
    rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "debootstrap --variant=minbase $SUITE with $PACKAGES into $ROOT"
T0="$(now)"
if ! debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOT" "$MIRROR" >"$WORK/debootstrap.log" 2>&1; then
    tail -n 30 "$WORK/debootstrap.log" >&2 || true
    [ -f "$ROOT/debootstrap/debootstrap.log" ] && tail -n 30 "$ROOT/debootstrap/debootstrap.log" >&2
    die "debootstrap failed (last lines above)"
fi
T_DEBOOTSTRAP="$(elapsed "$T0")"
log "debootstrap done in $T_DEBOOTSTRAP s ($(du -sh --one-file-system "$ROOT" | cut -f1))"

# --- strip: apt lists and caches, docs, man pages, locales, logs ----------------
T0="$(now)"
rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/cache/apt/* "$ROOT"/var/cache/debconf/*-old \
       "$ROOT"/var/cache/man "$ROOT"/var/log/* \
       "$ROOT"/usr/share/doc/* "$ROOT"/usr/share/man/* "$ROOT"/usr/share/info/* \
       "$ROOT"/usr/share/locale/* "$ROOT"/usr/share/lintian "$ROOT"/usr/share/linda
mkdir -p "$ROOT/var/lib/apt/lists/partial"
# Keep later package installs in derived images just as lean.
mkdir -p "$ROOT/etc/dpkg/dpkg.cfg.d"
cat >"$ROOT/etc/dpkg/dpkg.cfg.d/01-codebox-nodoc" <<'EOF'
path-exclude /usr/share/doc/*
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
EOF
# Docker supplies /dev, /proc, /sys, resolv.conf, hosts and hostname at run time.
for m in dev/pts dev proc sys; do
    if mountpoint -q "$ROOT/$m"; then umount -l "$ROOT/$m"; fi
done
rm -rf --one-file-system "$ROOT"/dev/* "$ROOT"/proc/* "$ROOT"/sys/* "$ROOT"/tmp/* "$ROOT"/var/tmp/*
: >"$ROOT/etc/resolv.conf"
: >"$ROOT/etc/hostname"
chmod 1777 "$ROOT/tmp" "$ROOT/var/tmp"
log "stripped in $(elapsed "$T0") s ($(du -sh --one-file-system "$ROOT" | cut -f1))"

# --- import ------------------------------------------------------------------------
# An imported image has no config: give it PATH, a UTF-8 locale and a default
# command (without CMD, `docker run IMAGE` with no command is refused).
T0="$(now)"
tar --numeric-owner -C "$ROOT" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'LABEL codebox.image=base' \
    --change 'CMD ["python3"]' \
    --message "codebox offline base: debootstrap --variant=minbase $SUITE + $PACKAGES" \
    - "$TAG" >/dev/null
T_IMPORT="$(elapsed "$T0")"
SIZE="$(docker image inspect --format '{{.Size}}' "$TAG")"
log "imported $TAG in $T_IMPORT s, size $((SIZE / 1000000)) MB"
log "done in $(elapsed "$T_START") s (debootstrap $T_DEBOOTSTRAP s, import $T_IMPORT s)"
