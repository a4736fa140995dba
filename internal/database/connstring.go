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
	if scheme, ok := foreignScheme(value); ok {
		return fmt.Errorf("%s: a %s URL is not a Postgres connection string: pginbox needs %s "+
			"(the value is not repeated: it may hold a password)", variable, scheme, urlForm)
	}
	reason := "does not parse"
	var pce *pgconn.ParseConfigError
	if errors.As(err, &pce) {
		text := pce.Error()
		if i := strings.LastIndex(text, "`: "); i >= 0 && !sharesPiece(text[i+3:], value) {
			reason = text[i+3:]
		}
	}
	return fmt.Errorf("%s: not a valid connection string (%s; the value is not repeated: it may hold a password); the form is %s",
		variable, reason, urlForm)
}

// urlForm is what a Postgres URL looks like, for the errors.
const urlForm = "postgres://user:password@host:5432/dbname"

// foreignScheme returns the scheme of value ("mysql://") when value is a URL
// of some other database than Postgres. Only a short run of letters, digits
// and + - . before "://" is a scheme: nothing else of value is returned.
func foreignScheme(value string) (string, bool) {
	i := strings.Index(value, "://")
	if i < 1 || i > 20 {
		return "", false
	}
	scheme := value[:i]
	for _, r := range scheme {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.') {
			return "", false
		}
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		return "", false
	}
	return scheme + "://", true
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
