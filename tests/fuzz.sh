#!/usr/bin/env bash
# Runs every fuzz target of the module for a budget each:
#   tests/fuzz.sh 20000x   (an execution count: what `make test` uses)
#   tests/fuzz.sh 5m       (a duration)
#
# A count budget has no wall-clock deadline. A duration budget can end in a
# spurious "context deadline exceeded" from Go's own fuzz coordinator when a
# worker is still mid-call at the deadline on a loaded machine
# (go.dev/issue/75804, fixed in Go 1.27): no input failed and nothing was
# written to testdata/fuzz. That one case is reported as a warning and the
# target is run again once; any failure that wrote a reproducer, or any other
# failure, fails the run.
set -uo pipefail
cd "$(dirname "$0")/.."
budget="${1:-20000x}"
go="${GO:-go}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

# crashers lists the reproducers under a package's testdata/fuzz/<target>.
crashers() { find "$1/testdata/fuzz/$2" -type f 2>/dev/null | sort; }

run_one() { # pkg dir target
	"$go" test "$1" -run '^$' -fuzz "^$3\$" -fuzztime "$budget" 2>&1 | tee "$log"
	return "${PIPESTATUS[0]}"
}

for pkg in $("$go" list ./...); do
	dir="$("$go" list -f '{{.Dir}}' "$pkg")"
	for target in $("$go" test -list 'Fuzz.*' "$pkg" 2>/dev/null | grep '^Fuzz'); do
		echo "fuzz $pkg $target ($budget)"
		for try in 1 2; do
			before="$(crashers "$dir" "$target")"
			if run_one "$pkg" "$dir" "$target"; then
				break
			fi
			after="$(crashers "$dir" "$target")"
			if [ "$before" != "$after" ] || ! grep -q 'context deadline exceeded' "$log"; then
				echo "fuzz: $target failed (reproducer, if any, under $dir/testdata/fuzz/$target)" >&2
				exit 1
			fi
			if [ "$try" -eq 2 ]; then
				echo "fuzz: $target hit the coordinator deadline race twice in a row" >&2
				exit 1
			fi
			echo "fuzz: warning: $target ended in Go's fuzz-coordinator deadline race (go.dev/issue/75804) with no reproducer; running it again" >&2
		done
	done
done
