package tests

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/pginbox/pginbox/runner/verify"
)

// TestPaddleSDKTimestampWindow pins what docs/providers/paddle.md says of
// the timestamp: Paddle's SDK (@paddle/paddle-node-sdk 3.10.0,
// isSignatureValid) refuses a ts more than 5 s old (here 10 s) but accepts any ts from
// the future (30 s, an hour ahead), while pginbox accepts ts within 5
// minutes of now either way.
func TestPaddleSDKTimestampWindow(t *testing.T) {
	t.Parallel()
	node, dir := sdkNode(t)
	const secret = "pdl_ntfset_01hv8clock_secret_0123"
	const body = `{"event_id":"evt_01","event_type":"transaction.completed","data":{}}`
	p, err := verify.New("paddle", []string{secret})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		offset         time.Duration
		sdkOK, pginbox bool
	}{
		{-10 * time.Second, false, true},
		{30 * time.Second, true, true},
		{4 * time.Minute, true, true},
		{time.Hour, true, false},
		{-time.Hour, false, false},
	} {
		t.Run(tc.offset.String(), func(t *testing.T) {
			now := time.Now()
			ts := now.Add(tc.offset).Unix()
			mac := hmac.New(sha256.New, []byte(secret))
			fmt.Fprintf(mac, "%d:%s", ts, body)
			header := fmt.Sprintf("ts=%d;h1=%s", ts, hex.EncodeToString(mac.Sum(nil)))
			var got struct {
				IsSignatureValid bool `json:"isSignatureValid"`
			}
			runNode(t, node, dir, "paddle.js", map[string]string{"secret": secret, "body": body, "header": header}, &got)
			if got.IsSignatureValid != tc.sdkOK {
				t.Errorf("Paddle's SDK, ts = now%+v: isSignatureValid %v, want %v", tc.offset, got.IsSignatureValid, tc.sdkOK)
			}
			h := http.Header{}
			h.Set("Paddle-Signature", header)
			if err := p.Verify(h, []byte(body), now); (err == nil) != tc.pginbox {
				t.Errorf("pginbox, ts = now%+v: %v, want accepted %v", tc.offset, err, tc.pginbox)
			}
		})
	}
}
