package database

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pginbox/pginbox/internal/localpg"
)

// TestOpenEmbeddedUsesThePassword: with DATABASE_URL unset, the embedded
// cluster's URL carries the generated password, and what the runner does
// first (connect, read the server) works through it.
func TestOpenEmbeddedUsesThePassword(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "pginbox-embedded-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, err := Open(ctx, "", dir, nil)
	if errors.Is(err, localpg.ErrNoBinaries) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	if !strings.Contains(db.URL, "postgres:") || !strings.Contains(db.URL, "@127.0.0.1:") {
		t.Fatalf("embedded URL without a password: %s", strings.SplitN(db.URL, "@", 2)[1])
	}
	conn, err := pgx.Connect(ctx, db.URL)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var method string
	if err := conn.QueryRow(ctx, `SELECT auth_method FROM pg_hba_file_rules WHERE address = '127.0.0.1'`).Scan(&method); err != nil || method != "scram-sha-256" {
		t.Fatalf("pg_hba for 127.0.0.1: %q, %v; want scram-sha-256", method, err)
	}
}

// TestOpenExistingCreatesNothing: without DATABASE_URL, OpenExisting on a
// folder with no cluster (missing, or left empty) returns a NoClusterError
// naming it, and creates neither the folder nor anything in it.
func TestOpenExistingCreatesNothing(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	for _, tc := range []struct{ name, dir string }{
		{"missing folder", filepath.Join(parent, "missing")},
		{"empty folder", parent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := OpenExisting(context.Background(), "", tc.dir, nil)
			var nc *NoClusterError
			if !errors.As(err, &nc) || nc.Dir != tc.dir {
				if db != nil {
					_ = db.Close(context.Background())
				}
				t.Fatalf("OpenExisting(%s): %v, want a NoClusterError naming it", tc.dir, err)
			}
			if !strings.Contains(err.Error(), tc.dir+" ") || !strings.Contains(err.Error(), "--data-dir") {
				t.Errorf("message: %q", err)
			}
		})
	}
	if entries, _ := os.ReadDir(parent); len(entries) > 0 {
		t.Errorf("OpenExisting created %s", entries[0].Name())
	}
}
