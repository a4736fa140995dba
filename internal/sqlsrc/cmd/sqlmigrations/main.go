// Command sqlmigrations writes the next migration for every canonical SQL
// source under sql/src that differs from its newest migration (or has none),
// then checks that the sources and migrations agree. Run it from the
// checkout's root: make sql-migrations.
//
//	go run ./internal/sqlsrc/cmd/sqlmigrations [-n]
//
// With -n it writes nothing and fails if a migration is due.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pginbox/pginbox/internal/sqlsrc"
)

func main() {
	dryRun := flag.Bool("n", false, "write nothing; fail if a migration is due")
	flag.Parse()
	if err := run(*dryRun); err != nil {
		fmt.Fprintln(os.Stderr, "sqlmigrations:", err)
		os.Exit(1)
	}
}

func run(dryRun bool) error {
	tree, err := sqlsrc.Load(os.DirFS("."))
	if err != nil {
		return err
	}
	pending := tree.Pending()
	for _, f := range pending {
		if dryRun {
			fmt.Println("due:", f.Path)
			continue
		}
		if err := os.WriteFile(filepath.FromSlash(f.Path), []byte(f.Text), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
		fmt.Println("wrote", f.Path)
	}
	if dryRun && len(pending) > 0 {
		return fmt.Errorf("%d migrations due: run make sql-migrations", len(pending))
	}
	if !dryRun && len(pending) > 0 {
		if tree, err = sqlsrc.Load(os.DirFS(".")); err != nil {
			return err
		}
	}
	if problems := tree.Problems(); len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, p)
		}
		return fmt.Errorf("%d problems", len(problems))
	}
	if len(pending) == 0 {
		fmt.Println("sql/src and the migrations agree: nothing to write")
	}
	return nil
}
