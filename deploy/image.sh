#!/usr/bin/env bash
# image.sh build|test|archive IMAGE — build pginbox's OCI image with buildah;
# test: build it and check it (the binary inside is static and runs
# `version`, the image runs as a non-root user with PGINBOX_ADDR=0.0.0.0:8080,
# and deploy/image-run.sh runs it as a container against a throwaway Postgres:
# migrate, serve, a signed delivery, the admin listener); archive: build it and
# write dist/pginbox-<version>.tar, which `docker load` and `podman load` read.
# Installs Debian's buildah when missing. Storage: vfs, isolation: chroot
# (no overlay or user namespaces needed). Override with BUILDAH_FLAGS.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: image.sh build|test|archive IMAGE}
image=${2:?usage: image.sh build|test|archive IMAGE}
GO=${GO:-go}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
STORAGE=(--storage-driver "${BUILDAH_STORAGE_DRIVER:-vfs}")

if ! command -v buildah >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "image: installing buildah with apt-get" >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends buildah >&2
fi

ctx=.cache/image
rm -rf "$ctx"; mkdir -p "$ctx"
CGO_ENABLED=0 $GO build -trimpath -ldflags "-s -w -X github.com/pginbox/pginbox/internal/cli.Version=$VERSION" \
  -o "$ctx/pginbox" ./runner/cmd/pginbox
cp /etc/ssl/certs/ca-certificates.crt "$ctx/"
buildah "${STORAGE[@]}" bud --isolation chroot ${BUILDAH_FLAGS:-} -f deploy/Containerfile -t "$image" "$ctx" >&2
echo "image: built $image" >&2
[ "$mode" = build ] && exit 0
if [ "$mode" = archive ]; then
  mkdir -p dist
  out="dist/pginbox-$VERSION.tar"
  rm -f "$out"
  buildah "${STORAGE[@]}" push "$image" "docker-archive:$out:$image" >&2
  echo "image: wrote $out (docker load -i $out, or podman load -i $out)" >&2
  exit 0
fi

fail() { echo "image-test: FAIL: $*" >&2; exit 1; }
user=$(buildah "${STORAGE[@]}" inspect --type image --format '{{.OCIv1.Config.User}}' "$image")
env=$(buildah "${STORAGE[@]}" inspect --type image --format '{{.OCIv1.Config.Env}}' "$image")
[ "$user" = "65532:65532" ] || fail "user is '$user', want 65532:65532"
[[ "$env" == *PGINBOX_ADDR=0.0.0.0:8080* ]] || fail "env $env lacks PGINBOX_ADDR=0.0.0.0:8080"
$GO version -m "$ctx/pginbox" | grep -q 'CGO_ENABLED=0' || fail "the binary is not built with CGO_ENABLED=0"
ctr=$(buildah "${STORAGE[@]}" from "$image")
trap 'buildah "${STORAGE[@]}" rm "$ctr" >/dev/null 2>&1 || true' EXIT
# Run the binary of the image's own root filesystem, as its user, with
# nothing else in it (no libc: a dynamic binary would not start).
root=$(buildah "${STORAGE[@]}" mount "$ctr")
out=$(chroot --userspec=65532:65532 "$root" /usr/local/bin/pginbox version) || fail "pginbox version inside the image: $out"
echo "$out" | grep -q "^pginbox $VERSION" || fail "unexpected version output: $out"
buildah "${STORAGE[@]}" umount "$ctr" >/dev/null
echo "image-test: ok: $image runs as $user, $out" >&2
GO="$GO" BUILDAH_STORAGE_DRIVER="${BUILDAH_STORAGE_DRIVER:-vfs}" $GO run ./tests/cmd/withpg -- ./deploy/image-run.sh "$image"
