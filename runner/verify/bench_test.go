package verify

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchBody is a ~2 KiB Sume job webhook.
var benchBody = `{"event":"job.completed","job_id":"job_01HZX3","status":"COMPLETED","data":{"notes":"` +
	strings.Repeat("x", 2000) + `"}}`

// benchStripeBody is a ~2 KiB Stripe event.
var benchStripeBody = `{"id":"evt_1PQ","object":"event","type":"payment_intent.succeeded","data":{"object":{"description":"` +
	strings.Repeat("x", 2000) + `"}}}`

func BenchmarkSumeVerify(b *testing.B) {
	now := time.Unix(1_700_000_000, 0)
	p := mustProvider(b, "sume", "previous-secret", "current-secret")
	h := sumeHeaders("current-secret", now.Unix(), benchBody)
	body := []byte(benchBody)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Verify(h, body, now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSumeIdentify(b *testing.B) {
	p := mustProvider(b, "sume", "secret")
	h := headers("X-Sume-Event-Id", "evt_1")
	body := []byte(benchBody)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Identify(h, body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStripeVerify(b *testing.B) {
	now := time.Unix(1_700_000_000, 0)
	p := mustProvider(b, "stripe", "whsec_previous", "whsec_current")
	ts := strconv.FormatInt(now.Unix(), 10)
	h := headers("Stripe-Signature", "t="+ts+",v1="+macHex("whsec_current", ts+"."+benchStripeBody)+",v0=00")
	body := []byte(benchStripeBody)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Verify(h, body, now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStripeIdentify(b *testing.B) {
	p := mustProvider(b, "stripe", "whsec_current")
	body := []byte(benchStripeBody)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Identify(http.Header{}, body); err != nil {
			b.Fatal(err)
		}
	}
}
