package console

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// cursor is the keyset position of the last event shown.
type cursor struct {
	At time.Time
	ID int64
}

// Cursors are opaque to clients: "v1.<received_at µs>.<id>", base64url.
func encodeCursor(at time.Time, id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("v1." + strconv.FormatInt(at.UnixMicro(), 10) + "." + strconv.FormatInt(id, 10)))
}

// decodeCursor reads a cursor from encodeCursor; anything else is a bad
// filter.
func decodeCursor(c string) (*cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil {
		if v, ok := strings.CutPrefix(string(b), "v1."); ok {
			us, ids, _ := strings.Cut(v, ".")
			at, err1 := strconv.ParseInt(us, 10, 64)
			id, err2 := strconv.ParseInt(ids, 10, 64)
			if err1 == nil && err2 == nil && id > 0 {
				return &cursor{At: time.UnixMicro(at), ID: id}, nil
			}
		}
	}
	return nil, badFilter("cursor: %q is not a cursor from next_cursor", c)
}
