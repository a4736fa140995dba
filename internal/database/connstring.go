package database

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// ConnStringError is the error about variable (DATABASE_URL,
// PGINBOX_DIRECT_URL) whose connection string value did not parse: it names
// the variable and pgx's reason, never the value nor any part of it (pgx
// masks the password it finds, but a malformed string can hide where the
// password ends).
func ConnStringError(variable, value string, err error) error {
	reason := "does not parse"
	var pce *pgconn.ParseConfigError
	if errors.As(err, &pce) {
		text := pce.Error()
		if i := strings.LastIndex(text, "`: "); i >= 0 && !sharesPiece(text[i+3:], value) {
			reason = text[i+3:]
		}
	}
	return fmt.Errorf("%s: not a valid connection string (%s; the value is not repeated: it may hold a password)", variable, reason)
}

// sharesPiece reports whether text repeats six bytes or more of value.
func sharesPiece(text, value string) bool {
	for i := 0; i+6 <= len(value); i++ {
		if strings.Contains(text, value[i:i+6]) {
			return true
		}
	}
	return false
}
