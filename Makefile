# pginbox — a Postgres-native inbox for third-party webhooks.
# `make help` lists the targets.

SHELL := /usr/bin/env bash
GO ?= go
BIN := bin/pginbox
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/pginbox/pginbox/internal/cli.Version=$(VERSION)
GOOSE_TAGS := no_clickhouse no_libsql no_mssql no_mysql no_sqlite3 no_vertica no_ydb
WITHPG := $(GO) run ./tests/cmd/withpg --
TEST_FLAGS ?= -count=1 -timeout 15m
FUZZTIME ?= 20000x
PKGS := ./...

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}'

.PHONY: build
build: ## build bin/pginbox
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./runner/cmd/pginbox

# make install copies bin/pginbox into $(DESTDIR)$(PREFIX)/bin.
PREFIX ?= $(HOME)/.local

.PHONY: install
install: build ## build bin/pginbox and copy it to PREFIX/bin (default ~/.local/bin; make install PREFIX=/usr/local)
	install -d "$(DESTDIR)$(PREFIX)/bin"
	install -m 0755 $(BIN) "$(DESTDIR)$(PREFIX)/bin/pginbox"
	@echo "installed $(DESTDIR)$(PREFIX)/bin/pginbox"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "$(PREFIX)/bin is not on your PATH: add it, e.g. export PATH=\"$(PREFIX)/bin:\$$PATH\"";; esac

.PHONY: postgres
postgres: ## install the PostgreSQL server binaries and PgBouncer if missing (apt)
	@./tests/ensure-postgres.sh
	@./tests/ensure-pgbouncer.sh

.PHONY: run
run: postgres build ## start pginbox serve on the embedded cluster under .pginbox/ (or DATABASE_URL) with a demo sume provider
	@echo "Send a signed sample delivery from another terminal (paste, or: bash docs/sample-delivery.sh):"
	@echo
	@tail -n 1 docs/sample-delivery.sh
	@echo
	PGINBOX_PROVIDERS="$${PGINBOX_PROVIDERS:-sume=sume}" PGINBOX_SECRET_SUME="$${PGINBOX_SECRET_SUME:-demo-secret-change-me}" ./$(BIN) serve

.PHONY: test
test: postgres ## run every test against a throwaway cluster (installs PostgreSQL, promtool for the Prometheus rules, and Chromium for the browser tests, if missing)
	@./tests/ensure-browser.sh
	@./tests/ensure-promtool.sh
	$(WITHPG) bash -c 'set -e; $(GO) test $(TEST_FLAGS) $(PKGS); for m in $(TEST_MODULES); do $(GO) -C "$$m" test $(TEST_FLAGS) ./...; done'
	@$(MAKE) --no-print-directory fuzz FUZZTIME=5000x

SCREENSHOTS := console-home.png console-home-dark.png console-events.png console-event.png

.PHONY: screenshots
screenshots: postgres ## regenerate the README's console screenshots (docs/console-*.png) from TestConsoleInBrowser in headless Chromium
	@./tests/ensure-browser.sh
	@rm -f $(addprefix tests/out/,$(SCREENSHOTS))
	$(WITHPG) $(GO) test -count=1 -timeout 10m ./tests -run '^TestConsoleInBrowser$$'
	cp $(addprefix tests/out/,$(SCREENSHOTS)) docs/
	@git status --short -- $(addprefix docs/,$(SCREENSHOTS))

.PHONY: rules-test
rules-test: ## check and unit-test the Prometheus alerting rules (deploy/prometheus) with promtool (installed if missing)
	@./tests/ensure-promtool.sh
	promtool check rules deploy/prometheus/pginbox-rules.yml
	cd deploy/prometheus && promtool test rules pginbox-rules.test.yml

.PHONY: test-race
test-race: postgres ## the tests with the race detector
	$(WITHPG) $(GO) test -race $(TEST_FLAGS) $(PKGS)

PG_MAJORS ?= 14 15 16 17 18
MATRIX_PKGS ?= ./tests/ ./internal/cli/ ./internal/process/ ./internal/ingest/

.PHONY: test-matrix
test-matrix: postgres ## the SQL suite once per PostgreSQL major, each on its own cluster (make test-matrix PG_MAJORS="14 18")
	@set -uo pipefail; mkdir -p .cache/test-matrix; summary=(); failed=0; passed=0; \
	for m in $(PG_MAJORS); do \
	  log=.cache/test-matrix/pg$$m.log; start=$$(date +%s); \
	  if ! dir=$$(./tests/pgversions.sh $$m); then \
	    summary+=("PostgreSQL $$m: FAIL (no binaries, see above)"); failed=$$((failed+1)); continue; \
	  fi; \
	  ver=$$("$$dir/postgres" --version | awk '{print $$3}'); \
	  echo "=== PostgreSQL $$ver from $$dir (log: $$log)"; \
	  env -u PGTESTDB_HOST -u PGTESTDB_PORT -u PGTESTDB_USER -u PGTESTDB_PASSWORD -u DATABASE_URL \
	    PGINBOX_PG_BINDIR="$$dir" PATH="$$dir:$$PATH" \
	    $(WITHPG) $(GO) test $(TEST_FLAGS) $(MATRIX_PKGS) 2>&1 | tee "$$log"; rc=$${PIPESTATUS[0]}; \
	  secs=$$(( $$(date +%s) - start )); \
	  if [ "$$rc" -eq 0 ]; then \
	    summary+=("PostgreSQL $$ver: PASS in $${secs}s"); passed=$$((passed+1)); \
	  else \
	    fails=$$( { grep -E '^--- FAIL: ' "$$log" | awk '{print $$3}'; grep -E '^FAIL[[:space:]]+[^ ]+[[:space:]]+\[' "$$log" | awk '{print $$2" "$$3" "$$4}'; } | paste -sd' ' -); \
	    summary+=("PostgreSQL $$ver: FAIL in $${secs}s (exit $$rc)$${fails:+: $$fails}"); failed=$$((failed+1)); \
	  fi; \
	done; \
	echo; echo "test-matrix summary:"; printf '  %s\n' "$${summary[@]}"; \
	echo "versions: $$passed passed, $$failed failed"; \
	[ "$$failed" -eq 0 ]

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME each: an execution count (20000x) or a duration (make fuzz FUZZTIME=5m)
	@GO="$(GO)" ./tests/fuzz.sh $(FUZZTIME)

.PHONY: bench
bench: postgres build ## the bench suite on its own cluster (or DATABASE_URL): table, bench/out/summary.json + charts, regenerates bench/REPORT.md (~15 min, plus seeding 10 M events for the storage scenarios)
	$(GO) run ./bench -out bench/out -report bench/REPORT.md -pginbox $(BIN)

.PHONY: bench-quick
bench-quick: postgres build ## the bench suite reduced to a few minutes (bench/out/summary.json, bench/out/REPORT-quick.md); same audit
	$(GO) run ./bench -quick -out bench/out -pginbox $(BIN)

IMAGE ?= localhost/pginbox:$(VERSION)

.PHONY: image
image: ## build the OCI image IMAGE (default localhost/pginbox:<version>) with buildah: static binary, FROM scratch, non-root, listens on 0.0.0.0:8080
	@VERSION=$(VERSION) GO=$(GO) ./deploy/image.sh build $(IMAGE)

.PHONY: image-test
image-test: ## build the image and run it as a container against a throwaway Postgres: migrate, serve, a signed delivery, /readyz, the admin listener on 0.0.0.0 with a token
	@VERSION=$(VERSION) GO=$(GO) ./deploy/image.sh test $(IMAGE)

.PHONY: image-archive
image-archive: ## build the image and write dist/pginbox-<version>.tar for docker load / podman load
	@VERSION=$(VERSION) GO=$(GO) ./deploy/image.sh archive $(IMAGE)

SOAK ?= 10m
SOAK_RATE ?= 100

.PHONY: soak
soak: postgres build ## steady signed load for SOAK (10m) at SOAK_RATE/s into one runner (sql: handler): per-minute RSS, goroutines, connections, p99s; audit (bench/out/soak.json)
	$(GO) run ./bench -soak $(SOAK) -soak-rate $(SOAK_RATE) -out bench/out -pginbox $(BIN)

# Modules of their own inside the repository, each keeping its dependencies
# out of pginbox's module graph (and so out of every importer's): the bench's
# River peer, the test harness's Docker fallback, the network-fault tests
# (toxiproxy), and the stock goose CLI (tools/goose holds no Go file of its
# own).
NESTED_MODULES := bench/river internal/pgtest/dockerpg tests/netfault
# The nested modules whose tests make test runs too.
TEST_MODULES := tests/netfault
TOOL_MODULES := tools/goose
# The most modules `go list -m all` may list for pginbox: an importer's graph
# takes in every requirement of go.mod, test-only ones included.
MODULE_BUDGET ?= 180

.PHONY: lint
lint: ## gofmt, go vet, and go mod tidy -diff (the main module and every nested one); the module graph within MODULE_BUDGET
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) mod tidy -diff
	@n=$$($(GO) list -m all | wc -l); echo "go list -m all: $$n modules (at most $(MODULE_BUDGET))"; \
	  if [ "$$n" -gt $(MODULE_BUDGET) ]; then echo "the module graph grew past $(MODULE_BUDGET): keep test-only and tool dependencies in a nested module"; exit 1; fi
	@set -e; for m in $(NESTED_MODULES); do echo "$(GO) -C $$m vet ./..."; $(GO) -C $$m vet ./...; done
	@set -e; for m in $(NESTED_MODULES) $(TOOL_MODULES); do echo "$(GO) -C $$m mod tidy -diff"; $(GO) -C $$m mod tidy -diff; done

.PHONY: sql-dist
sql-dist: ## write the flattened migrations to dist/migrations/ for the stock goose CLI
	rm -rf dist/migrations
	$(GO) run ./runner/cmd/pginbox sql-dist dist/migrations
	@echo "apply with the stock goose CLI (make goose builds bin/goose), its version table in schema webhooks:"
	@echo "  psql \"\$$DATABASE_URL\" -c 'CREATE SCHEMA IF NOT EXISTS webhooks'"
	@echo "  GOOSE_TABLE=webhooks.goose_db_version bin/goose -dir dist/migrations postgres \"\$$DATABASE_URL\" up"

.PHONY: sql-checksums
sql-checksums: ## at release time: record the checksums of every migration in sql/released.sha256 (refuses if a released file changed)
	@if [ -f sql/released.sha256 ]; then sha256sum --quiet -c sql/released.sha256 || { echo "a released migration changed: restore it before recording a release"; exit 1; }; fi
	@ls sql/schema/[0-9]*.sql sql/functions/[0-9]*.sql sql/views/[0-9]*.sql sql/checks/[0-9]*.sql \
	  | awk -F/ '{print $$3 "\t" $$0}' | sort | cut -f2 | xargs sha256sum > sql/released.sha256
	@echo "sql/released.sha256: $$(wc -l < sql/released.sha256) migrations, the last $$(tail -n 1 sql/released.sha256 | sed -E 's|.*/([0-9]{5})_.*|\1|')"

# The goose CLI is built from the module tools/goose, so its drivers stay out
# of pginbox's own module graph.
bin/goose: tools/goose/go.mod tools/goose/go.sum
	$(GO) build -C tools/goose -tags "$(GOOSE_TAGS)" -o $(CURDIR)/bin/goose github.com/pressly/goose/v3/cmd/goose

.PHONY: goose
goose: bin/goose ## build the stock goose CLI (Postgres driver only) into bin/goose

.PHONY: migration
migration: ## create the next schema migration (tables, indexes, privileges; forward-only): make migration NAME=create_table_foo. A function, view or check: edit sql/src, then make sql-migrations
	@test -n "$(NAME)" || { echo "usage: make migration NAME=verb_object [DIR=schema|functions|views|checks]"; exit 2; }
	@dir=sql/$${DIR:-$$(case "$(NAME)" in *function*) echo functions;; *view*) echo views;; *check*) echo checks;; *) echo schema;; esac)}; \
	last=$$(ls sql/*/[0-9][0-9][0-9][0-9][0-9]_*.sql | xargs -n1 basename | cut -c1-5 | sort -n | tail -1); \
	next=$$(printf '%05d' $$((10#$$last + 1))); \
	f=$$dir/$${next}_$(NAME).sql; \
	printf -- '-- +goose Up\n-- +goose StatementBegin\n\n-- +goose StatementEnd\n' > $$f; \
	echo "created $$f"

.PHONY: sql-migrations
sql-migrations: ## fold every changed sql/src file into its newest migration while that is unreleased, else write the next one (NEW=1: never fold), then check they agree
	$(GO) run ./internal/sqlsrc/cmd/sqlmigrations $(if $(NEW),-new)

.PHONY: clean
clean: ## remove build output (keeps the .pginbox cluster)
	rm -rf bin dist bench/out

.PHONY: schema
schema: postgres ## rewrite sql/schema.sql (the reference schema) from a freshly migrated database (after make migration or make sql-migrations)
	$(WITHPG) $(GO) test -count=1 ./tests -run '^TestReferenceSchema$$' -update
	@git diff --stat -- sql/schema.sql
