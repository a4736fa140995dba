#!/usr/bin/env bash
# ensure-promtool.sh installs promtool (Debian's prometheus package) when it
# is not on PATH, so TestPrometheusRules can run `promtool test rules` on
# deploy/prometheus; `make test` calls it, and so does the test itself. It
# fails when promtool is still missing: the rules' tests must not skip.
set -uo pipefail
command -v promtool >/dev/null 2>&1 && exit 0
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
  echo "ensure-promtool: installing Debian's prometheus package (for promtool) with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends prometheus >&2 ||
    { apt-get -o DPkg::Lock::Timeout=300 update -qq >&2 &&
      apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends prometheus >&2; }
fi
command -v promtool >/dev/null 2>&1 && exit 0
echo "ensure-promtool: promtool is missing and could not be installed (as root: apt-get install prometheus)" >&2
exit 1
