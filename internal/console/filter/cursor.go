package filter

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// Cursor is the keyset position of the last event shown.
type Cursor struct {
	At time.Time
	ID int64
}

// EncodeCursor returns the cursor of the event (at, id); cursors are
// opaque to clients: "v1.<received_at µs>.<id>", base64url.
func EncodeCursor(at time.Time, id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("v1." + strconv.FormatInt(at.UnixMicro(), 10) + "." + strconv.FormatInt(id, 10)))
}

// The times a cursor may hold: years 1 to 9999, what an event's
// received_at can be; a tampered one past them (v1.9223372036854775807.1)
// would reach Postgres as a timestamp out of its range.
var (
	cursorMin = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	cursorMax = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC).UnixMicro()
)

// decodeCursor reads a cursor from EncodeCursor; anything else is a bad
// filter.
func decodeCursor(c string) (*Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil {
		if v, ok := strings.CutPrefix(string(b), "v1."); ok {
			us, ids, _ := strings.Cut(v, ".")
			at, err1 := strconv.ParseInt(us, 10, 64)
			id, err2 := strconv.ParseInt(ids, 10, 64)
			if err1 == nil && err2 == nil && id > 0 && at >= cursorMin && at <= cursorMax {
				return &Cursor{At: time.UnixMicro(at), ID: id}, nil
			}
		}
	}
	return nil, bad("cursor: %q is not a cursor from next_cursor", c)
}
