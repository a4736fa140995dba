package verify_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/pginbox/pginbox/runner/verify"
)

// Example verifies a signed Sume delivery, extracts its idempotency key and
// event type, and refuses the same delivery once its body was altered.
func Example() {
	secret := "demo-secret-change-me"
	body := []byte(`{"event":"job.completed","job_id":"job_123","status":"COMPLETED"}`)
	now := time.Unix(1_700_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)

	// What Sume sends: v1=hex(HMAC-SHA256(secret, "<timestamp>.<body>")).
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + string(body)))
	h := http.Header{}
	h.Set("X-Sume-Timestamp", ts)
	h.Set("X-Sume-Signature", "v1="+hex.EncodeToString(mac.Sum(nil)))

	p, err := verify.New("sume", []string{"old-secret-0123456789", secret})
	if err != nil {
		panic(err)
	}
	if err := p.Verify(h, body, now); err != nil {
		fmt.Println("rejected:", err)
		return
	}
	d, err := p.Identify(h, body)
	if err != nil {
		fmt.Println("rejected:", err)
		return
	}
	fmt.Println(d.ExternalID, d.EventType)

	err = p.Verify(h, append(body, ' '), now)
	fmt.Println(err)
	// Output:
	// job_123 job.completed
	// rejected with 401: signature mismatch
}
