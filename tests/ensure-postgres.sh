#!/usr/bin/env bash
# ensure-postgres.sh makes sure the PostgreSQL server binaries (initdb, pg_ctl,
# pg_dump) are on this machine, installing Debian's postgresql package when
# they are missing, and (best effort) Debian's pg_cron for the pg_cron test.
# The test suite, the bench and `make run` start their own clusters from these
# binaries; this script never starts a server itself.
set -euo pipefail

have_server() {
  command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1 && return 0
  compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
}

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
updated=""
apt_install() {
  if [ -z "$updated" ]; then $SUDO apt-get update -qq >&2; updated=1; fi
  $SUDO apt-get install -y -qq --no-install-recommends "$@" >&2
}

if ! { have_server && command -v pg_dump >/dev/null 2>&1; }; then
  if [ -n "${DATABASE_URL:-}${PGTESTDB_HOST:-}" ]; then
    exit 0 # an outside server is configured
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure-postgres: no PostgreSQL binaries and no apt-get; install PostgreSQL 14+ or set DATABASE_URL" >&2
    exit 1
  fi
  echo "ensure-postgres: installing PostgreSQL with apt-get" >&2
  apt_install postgresql postgresql-client
fi

# pg_cron for the newest system major, so TestScheduleWithPgCron runs rather
# than skips. Never fatal: the test skips with a reason without it.
major=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sed 's#.*/postgresql/\([0-9]*\)/bin#\1#' | sort -n | tail -1)
if [ -n "$major" ] && [ ! -e "/usr/lib/postgresql/$major/lib/pg_cron.so" ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-postgres: installing postgresql-$major-cron with apt-get" >&2
  apt_install "postgresql-$major-cron" || echo "ensure-postgres: pg_cron not installed; its test will skip" >&2
fi
exit 0
