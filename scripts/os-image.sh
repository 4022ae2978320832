#!/usr/bin/env bash
# os-image.sh makes the Debian OS image that the base images start FROM and
# pushes it to the local registry as $SSEBENCH_DEV_REGISTRY_ADDR/ssebench/os/debian:bookworm.
#
# mmdebstrap builds a minimal bookworm root filesystem from this machine's
# own apt sources (/etc/apt/sources.list and sources.list.d), so the image's
# apt reaches the same package mirror as the host and no mirror is named in
# this repository. The tarball is cached under
# $SSEBENCH_DEV_CACHE/rootfs-<suite>-<arch>-<key>/, keyed by the mmdebstrap
# arguments, the host's apt sources and local CAs; tools/osimage wraps it
# in a one-layer OCI image and pushes it (cheap when the registry has it).
#
# Usage: scripts/os-image.sh            (prints the image reference)
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
take_lock

ARCH=$(dpkg --print-architecture)
VARIANT=minbase
# Fixed timestamp for every file and for the image config: with the same
# packages the tarball and the image digest are the same on every machine.
EPOCH=1700000000

# host_sources prints the paths of the host's apt source files. mmdebstrap
# pastes each file given as a MIRROR argument into the chroot's sources, in
# either one-line or deb822 style.
host_sources() {
	local f
	if [ -s /etc/apt/sources.list ] && grep -Eq '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list; then
		echo /etc/apt/sources.list
	fi
	for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		[ -s "$f" ] || continue
		grep -Eq '^[[:space:]]*(deb[[:space:]]|Types:.*\bdeb\b)' "$f" || continue
		# Only sources of Debian itself: a third-party repository for another
		# suite would break the bookworm chroot.
		grep -Eqi "(^|[[:space:]])$OS_SUITE([-/[:space:]]|$)" "$f" || continue
		echo "$f"
	done
}

# apt_opts prints mmdebstrap --aptopt arguments that carry over the host
# apt settings the mirror depends on (a snapshot mirror, for example, needs
# Check-Valid-Until off). They stay in the image for RUN steps' apt-get.
apt_opts() {
	local key val
	for key in Acquire::Check-Valid-Until Acquire::Check-Date; do
		val=$(apt-config dump "$key" 2>/dev/null | awk -v k="$key" '$1 == k { gsub(/[";]/, "", $2); print $2 }')
		[ -n "$val" ] || continue
		printf -- '--aptopt=%s "%s"\n' "$key" "$val"
	done
}

# The host's own trust anchors (update-ca-certificates' local directory). A
# machine behind a TLS-inspecting proxy needs them for https downloads in
# RUN steps; they take effect when a base image installs ca-certificates,
# whose postinst runs update-ca-certificates.
LOCAL_CA_DIR=/usr/local/share/ca-certificates
mapfile -t LOCAL_CAS < <(find "$LOCAL_CA_DIR" -type f -name '*.crt' 2>/dev/null | LC_ALL=C sort)

mapfile -t SOURCES < <(host_sources)
[ ${#SOURCES[@]} -gt 0 ] || die "no apt sources for Debian $OS_SUITE found in /etc/apt/sources.list(.d); mmdebstrap needs them"
mapfile -t APTOPTS < <(apt_opts)

# mmdebstrap runs hooks with sh, the chroot's path in $1.
# shellcheck disable=SC2016
STRIP_HOST_FILES='rm -f "$1/etc/resolv.conf" "$1/etc/hostname"'
MMDEBSTRAP_ARGS=(
	--variant="$VARIANT"
	--architectures="$ARCH"
	--format=tar
	# Device nodes have no place in an image layer; the runtime provides /dev.
	--skip=output/dev
	# The build host's resolver and name do not belong in the image either.
	--customize-hook="$STRIP_HOST_FILES"
	# Kept in the image (/etc/dpkg/dpkg.cfg.d/99mmdebstrap), for the base
	# images' apt-get in RUN steps: no fsync per unpacked file (a build
	# step that fails is thrown away whole anyway), and no documentation,
	# manual pages or translations, which no task uses and which every
	# layer would carry and compress (the licences stay).
	--dpkgopt=force-unsafe-io
	--dpkgopt='path-exclude=/usr/share/doc/*'
	--dpkgopt='path-include=/usr/share/doc/*/copyright'
	--dpkgopt='path-exclude=/usr/share/man/*'
	--dpkgopt='path-exclude=/usr/share/info/*'
	--dpkgopt='path-exclude=/usr/share/locale/*'
	--dpkgopt='path-include=/usr/share/locale/locale.alias'
	--aptopt='Acquire::Languages "none"'
	"${APTOPTS[@]}"
)
if [ ${#LOCAL_CAS[@]} -gt 0 ]; then
	MMDEBSTRAP_ARGS+=(--customize-hook="cp -a '$LOCAL_CA_DIR/.' \"\$1$LOCAL_CA_DIR/\"")
fi

KEY=$({
	printf '%s\n' "$OS_SUITE" "$ARCH" "$EPOCH" "${MMDEBSTRAP_ARGS[@]}"
	cat "${SOURCES[@]}"
	[ ${#LOCAL_CAS[@]} -eq 0 ] || cat "${LOCAL_CAS[@]}"
} | sha256sum | cut -c1-16)
DIR="$SSEBENCH_DEV_CACHE/rootfs-$OS_SUITE-$ARCH-$KEY"
TARBALL="$DIR/rootfs.tar"

if [ -s "$TARBALL" ]; then
	log "os image: rootfs cached in $DIR"
else
	command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed; run scripts/install-deps.sh"
	log "os image: building $OS_SUITE $VARIANT rootfs with mmdebstrap (about a minute)"
	start=$(now_s)
	mkdir -p "$DIR"
	tmp="$DIR/rootfs.tar.tmp"
	rm -f "$tmp"
	if ! SOURCE_DATE_EPOCH=$EPOCH mmdebstrap --quiet "${MMDEBSTRAP_ARGS[@]}" \
		"$OS_SUITE" "$tmp" "${SOURCES[@]}" >"$DIR/mmdebstrap.log" 2>&1; then
		show_log_tail "$DIR/mmdebstrap.log"
		rm -f "$tmp"
		die "mmdebstrap failed (see $DIR/mmdebstrap.log)"
	fi
	mv "$tmp" "$TARBALL"
	log "os image: rootfs built in $(($(now_s) - start))s"
	# Older keys (changed sources, a machine's new proxy CA) are dead weight
	# at about 170 MB each.
	for old in "$SSEBENCH_DEV_CACHE/rootfs-$OS_SUITE-$ARCH-"*; do
		[ "$old" = "$DIR" ] || rm -rf "$old"
	done
fi

# The pusher is built once per source change; go's build cache makes the
# rebuild check cheap.
OSIMAGE_BIN="$SSEBENCH_DEV_CACHE/bin/osimage"
mkdir -p "$(dirname "$OSIMAGE_BIN")"
(cd "$SSEBENCH_ROOT" && go build -trimpath -buildvcs=false -o "$OSIMAGE_BIN" ./tools/osimage) || die "building tools/osimage failed"

probe_registry || die "the registry at $SSEBENCH_DEV_REGISTRY_ADDR does not answer; run scripts/dev-up.sh registry"
digest=$("$OSIMAGE_BIN" -rootfs "$TARBALL" -ref "$OS_IMAGE" -arch "$(go env GOARCH)" -created "$EPOCH") ||
	die "pushing $OS_IMAGE failed"
log "os image: pushed $OS_IMAGE@$digest"
echo "$OS_IMAGE"
