package slack_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/internal/provider/slack"
	"github.com/pginbox/pginbox/runner/verify"
)

var slackHeaders = providertest.SlackHeaders

func TestSlackVerify(t *testing.T) {
	t.Parallel()
	const secret, oldSecret = "8f742231b10e8888abcd99yyyzzz85a5", "0ld51gn1ngs3cr3t0000000000000000"
	now := time.Unix(1_700_000_000, 0)
	ts := now.Unix()
	tsS := strconv.FormatInt(ts, 10)
	body := `{"token":"x","team_id":"T1","type":"event_callback","event":{"type":"app_mention"},"event_id":"Ev1"}`
	v0 := "v0=" + providertest.MACHex(secret, "v0:"+tsS+":"+body)
	raw := func(sig, ts string) http.Header {
		return providertest.Headers("X-Slack-Signature", sig, "X-Slack-Request-Timestamp", ts)
	}
	tests := []struct {
		name    string
		secrets []string
		h       http.Header
		body    string
		status  int
		reason  string
	}{
		{"valid", []string{secret}, slackHeaders(secret, ts, body), body, 0, ""},
		{"valid with the second of two secrets", []string{oldSecret, secret}, slackHeaders(secret, ts, body), body, 0, ""},
		{"wrong secret", []string{secret}, slackHeaders(oldSecret, ts, body), body, 401, verify.ReasonSignatureMismatch},
		{"tampered body", []string{secret}, slackHeaders(secret, ts, body), strings.Replace(body, "Ev1", "Ev2", 1), 401, verify.ReasonSignatureMismatch},
		{"timestamp changed after signing", []string{secret}, raw(v0, strconv.FormatInt(ts+1, 10)), body, 401, verify.ReasonSignatureMismatch},
		{"signed with '.' instead of ':'", []string{secret}, raw("v0="+providertest.MACHex(secret, "v0."+tsS+"."+body), tsS), body, 401, verify.ReasonSignatureMismatch},
		{"spaces around the signature", []string{secret}, raw(" "+v0+" ", tsS), body, 0, ""},
		{"upper-case hex", []string{secret}, raw("v0="+strings.ToUpper(v0[3:]), tsS), body, 0, ""},
		{"missing header", []string{secret}, providertest.Headers("X-Slack-Request-Timestamp", tsS), body, 401, verify.ReasonSignatureMissing},
		{"blank header", []string{secret}, raw("  ", tsS), body, 401, verify.ReasonSignatureMissing},
		{"malformed: no v0=", []string{secret}, raw(v0[3:], tsS), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: v1=", []string{secret}, raw("v1="+v0[3:], tsS), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: short", []string{secret}, raw(v0[:40], tsS), body, 401, verify.ReasonSignatureMalformed},
		{"malformed: two signatures", []string{secret}, raw(v0+","+v0, tsS), body, 401, verify.ReasonSignatureMalformed},
		{"timestamp missing", []string{secret}, providertest.Headers("X-Slack-Signature", v0), body, 401, verify.ReasonTimestampMissing},
		{"timestamp malformed", []string{secret}, raw(v0, "now"), body, 401, verify.ReasonTimestampMalformed},
		{"timestamp with a sign", []string{secret}, raw(v0, "+"+tsS), body, 401, verify.ReasonTimestampMalformed},
		{"stale timestamp (-6 min)", []string{secret}, slackHeaders(secret, ts-360, body), body, 401, verify.ReasonTimestampOutOfTolerance},
		{"future timestamp (+6 min)", []string{secret}, slackHeaders(secret, ts+360, body), body, 401, verify.ReasonTimestampOutOfTolerance},
		{"within tolerance (-5 min)", []string{secret}, slackHeaders(secret, ts-300, body), body, 0, ""},
		{"within tolerance (+5 min)", []string{secret}, slackHeaders(secret, ts+300, body), body, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := providertest.MustProvider(t, "slack", tt.secrets...).Verify(tt.h, []byte(tt.body), now)
			providertest.CheckReject(t, err, tt.status, tt.reason)
		})
	}
}

func TestSlackIdentify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		body      string
		key, typ  string
		handshake string // the answer to a url_verification
		reason    string
	}{
		{"event_callback: the inner event's type", `{"type":"event_callback","event_id":"Ev08MFMKH6","event":{"type":"app_mention","text":"hi"}}`, "Ev08MFMKH6", "app_mention", "", ""},
		{"another top-level type", `{"type":"app_uninstalled_team","event_id":"Ev2"}`, "Ev2", "app_uninstalled_team", "", ""},
		{"url_verification is a handshake", `{"token":"t","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`, "", "", `{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}`, ""},
		{"url_verification escapes its challenge", `{"challenge":"a\"<b>","type":"url_verification"}`, "", "", `{"challenge":"a\"\u003cb\u003e"}`, ""},
		{"url_verification without a challenge", `{"type":"url_verification"}`, "", "", "", verify.ReasonKeyMissing},
		{"event_callback without an inner type", `{"type":"event_callback","event_id":"Ev1","event":{"text":"hi"}}`, "", "", "", verify.ReasonEventTypeMissing},
		{"event_callback with a non-object event", `{"type":"event_callback","event_id":"Ev1","event":"app_mention"}`, "", "", "", verify.ReasonEventTypeMissing},
		{"nested event_id ignored", `{"type":"event_callback","event":{"type":"message","event_id":"Ev1"}}`, "", "", "", verify.ReasonKeyMissing},
		{"event_id null", `{"type":"event_callback","event_id":null,"event":{"type":"message"}}`, "", "", "", verify.ReasonKeyMissing},
		{"event_id blank", `{"type":"event_callback","event_id":" ","event":{"type":"message"}}`, "", "", "", verify.ReasonKeyInvalid},
		{"type missing", `{"event_id":"Ev1"}`, "", "", "", verify.ReasonEventTypeMissing},
		{"body not json (a slash command)", `token=x&command=%2Fweather`, "", "", "", verify.ReasonBodyNotJSON},
	}
	p := providertest.MustProvider(t, "slack", "identify-only-secret-0123")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := p.Identify(providertest.Headers("X-Slack-Retry-Num", "1"), []byte(tt.body))
			if tt.reason != "" {
				providertest.CheckReject(t, err, http.StatusBadRequest, tt.reason)
				return
			}
			providertest.CheckReject(t, err, 0, "")
			if d.ExternalID != tt.key || d.EventType != tt.typ || string(d.Handshake) != tt.handshake || string(d.Payload) != tt.body || !d.KeySigned {
				t.Fatalf("Identify = %+v (handshake %s), want key %q type %q handshake %s", d, d.Handshake, tt.key, tt.typ, tt.handshake)
			}
		})
	}
}

func FuzzParseSlackSignature(f *testing.F) {
	for _, s := range []string{"", "v0=" + providertest.FuzzSig, " v0=" + providertest.FuzzSig + " ", "v1=" + providertest.FuzzSig, providertest.FuzzSig, "v0=", "v0=zz", "v0=" + providertest.FuzzSig + ",v0=" + providertest.FuzzSig} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		mac, err := slack.ParseSlackSignature(header)
		providertest.CheckFuzzReject(t, err, http.StatusUnauthorized, providertest.VerifyReasons)
		if err == nil {
			providertest.CheckSigs(t, [][]byte{mac})
		}
		providertest.VerifyAll(t, providertest.Headers("X-Slack-Signature", header, "X-Slack-Request-Timestamp", "1614265330"), []byte(`{}`))
	})
}

func FuzzSlackIdentify(f *testing.F) {
	for _, s := range []string{`{"type":"url_verification","challenge":"c"}`, `{"type":"event_callback","event_id":"Ev1","event":{"type":"message"}}`, `{"type":"event_callback","event_id":1,"event":[]}`, `{}`, `[]`} {
		f.Add(s)
	}
	p := providertest.MustProvider(f, "slack", "identify-only-secret-0123")
	f.Fuzz(func(t *testing.T, body string) {
		d, err := p.Identify(http.Header{}, []byte(body))
		providertest.CheckFuzzReject(t, err, http.StatusBadRequest, providertest.IdentifyReasons)
		if err != nil {
			return
		}
		if d.Handshake != nil {
			if d.ExternalID != "" || d.EventType != "" {
				t.Fatalf("a handshake with a key or type: %+v", d)
			}
			return
		}
		providertest.CheckText(t, "key", d.ExternalID)
		providertest.CheckText(t, "event type", d.EventType)
	})
}
