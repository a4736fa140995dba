// Command sqlmigrations brings the migrations in step with every canonical
// SQL source under sql/src that differs from its newest migration (or has
// none), then checks that the sources and migrations agree. Run it from the
// checkout's root: make sql-migrations.
//
//	go run ./internal/sqlsrc/cmd/sqlmigrations [-n] [-new]
//
// Where the object's newest migration is unreleased (not in
// sql/released.sha256) and was written by this command, it rewrites that
// migration between its begin and end lines (a fold); otherwise it writes
// the next migration. With -n it writes nothing, says which files are due
// (fold or new, and why) and fails if one is. With -new it folds nothing.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pginbox/pginbox/internal/sqlsrc"
)

func main() {
	dryRun := flag.Bool("n", false, "write nothing; say what is due (fold or new) and fail if anything is")
	addOnly := flag.Bool("new", false, "write the next migration of every changed source, folding none into an unreleased one")
	flag.Parse()
	if err := run(*dryRun, *addOnly); err != nil {
		fmt.Fprintln(os.Stderr, "sqlmigrations:", err)
		os.Exit(1)
	}
}

func run(dryRun, addOnly bool) error {
	tree, err := sqlsrc.Load(os.DirFS("."))
	if err != nil {
		return err
	}
	tree.AddOnly = addOnly
	pending := tree.Pending()
	for _, f := range pending {
		if !dryRun {
			if err := os.WriteFile(filepath.FromSlash(f.Path), []byte(f.Text), 0o644); err != nil {
				return fmt.Errorf("write %s: %w", f.Path, err)
			}
		}
		fmt.Println(f.Report(dryRun))
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
