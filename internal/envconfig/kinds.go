package envconfig

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// errForm reports a value of the wrong form: the error then says what the
// value should be (the kind's want).
var errForm = errors.New("bad form")

// kind is how the values of a setting are read and checked: its parse reads
// the variable's text, its valid is the rule on a value, applied to what
// parse read and by Config.Validate to what a Go program set.
type kind struct {
	// want completes an error: `"x" <want>`, e.g. "is not a whole number from 1 to 1024".
	want string
	// secret: errors never repeat the value.
	secret bool
	// parse reads the variable's text. errForm means "not <want>"; another
	// error is the whole message.
	parse func(s string) (any, error)
	// valid is the rule on a parsed value; nil means any parsed value is valid.
	valid func(v any) bool
	// unset reports whether a field of a Config holds no value, so its
	// default applies; nil means its zero value.
	unset func(v any) bool
}

// read parses text s and checks it: the value, or the message of the error
// (what follows the variable's name) when s is not valid.
func (k kind) read(s string) (any, string) {
	v, err := k.parse(s)
	if err == nil && (k.valid == nil || k.valid(v)) {
		return v, ""
	}
	if err != nil && !errors.Is(err, errForm) {
		return nil, err.Error()
	}
	if k.secret {
		return nil, k.want
	}
	return nil, fmt.Sprintf("%q %s", s, k.want)
}

// text is a string taken as it is.
func text() kind {
	return kind{parse: func(s string) (any, error) { return s, nil }}
}

// hostPort is a host:port listen address; orOff also takes "off", and trims
// the spaces around the value.
func hostPort(orOff bool) kind {
	k := kind{want: "is not host:port", parse: func(s string) (any, error) { return s, nil }}
	k.valid = func(v any) bool {
		_, _, err := net.SplitHostPort(v.(string))
		return err == nil
	}
	if orOff {
		k.want = "is not host:port or off"
		k.parse = func(s string) (any, error) { return strings.TrimSpace(s), nil }
		valid := k.valid
		k.valid = func(v any) bool { return v == "off" || valid(v) }
	}
	return k
}

// oneOf is one of values; the empty string means the default.
func oneOf(values ...string) kind {
	last := len(values) - 1
	want := "is not " + strings.Join(values[:last], ", ") + " or " + values[last]
	return kind{want: want, parse: func(s string) (any, error) { return s, nil }, valid: func(v any) bool {
		s := v.(string)
		if s == "" {
			return true
		}
		for _, x := range values {
			if s == x {
				return true
			}
		}
		return false
	}}
}

// logLevel is debug, info, warn or error.
func logLevel() kind {
	return kind{want: "is not debug, info, warn or error", parse: func(s string) (any, error) {
		var l slog.Level
		if err := l.UnmarshalText([]byte(s)); err != nil {
			return nil, errForm
		}
		return l, nil
	}}
}

// token is a secret of at least min characters; empty means none.
func token(min int) kind {
	return kind{
		want:   fmt.Sprintf("is shorter than %d characters: use a long random token (openssl rand -hex 32)", min),
		secret: true,
		parse:  func(s string) (any, error) { return s, nil },
		valid:  func(v any) bool { s := v.(string); return s == "" || len(s) >= min },
	}
}

// hostNames is a comma list of host names, lower-cased; empty items are skipped.
func hostNames() kind {
	return kind{parse: func(s string) (any, error) {
		var hosts []string
		for _, h := range strings.Split(s, ",") {
			if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
				if strings.ContainsAny(h, "/ @") {
					return nil, fmt.Errorf("%q is not a host name", h)
				}
				hosts = append(hosts, h)
			}
		}
		return hosts, nil
	}}
}

// duration is a positive duration in Go's units plus d for days; a schedule
// also takes "off" (stored as -1) and any negative duration, which disable it.
func duration(schedule bool) kind {
	return kind{want: "is not a positive duration like 30s, 5m or 30d", parse: func(s string) (any, error) {
		if schedule && s == "off" {
			return time.Duration(-1), nil
		}
		d, err := ParseDuration(s)
		if err != nil {
			return nil, errForm
		}
		return d, nil
	}, valid: func(v any) bool {
		d := v.(time.Duration)
		return d > 0 || schedule && d < 0
	}}
}

// wholeNumber is an int from min to max; a Config's zero or negative means
// the default.
func wholeNumber(min, max int) kind {
	return kind{want: fmt.Sprintf("is not a whole number from %d to %d", min, max), parse: func(s string) (any, error) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, errForm
		}
		return n, nil
	}, valid: func(v any) bool {
		n := v.(int)
		return n >= min && n <= max
	}, unset: func(v any) bool { return v.(int) <= 0 }}
}

// bytes is a positive int64 count of bytes; a Config's zero or negative
// means the default.
func bytes() kind {
	return kind{want: "is not a positive number of bytes", parse: func(s string) (any, error) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, errForm
		}
		return n, nil
	}, valid: func(v any) bool { return v.(int64) >= 1 }, unset: func(v any) bool { return v.(int64) <= 0 }}
}

// negated is a boolean stored negated: PGINBOX_LISTEN=false sets PollOnly.
func negated() kind {
	return kind{want: "is not true or false", parse: func(s string) (any, error) {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, errForm
		}
		return !b, nil
	}}
}

// providerList is PGINBOX_PROVIDERS: name=kind items, read by readProviders.
func providerList() kind {
	return kind{parse: func(s string) (any, error) { return parseProviders(s) }}
}

// ParseDuration is time.ParseDuration plus a "d" (24h) unit: "30d", "1d12h".
func ParseDuration(s string) (time.Duration, error) {
	if i := strings.IndexByte(s, 'd'); i > 0 {
		days, err := strconv.Atoi(s[:i])
		if err != nil {
			return 0, fmt.Errorf("bad duration %q", s)
		}
		rest := time.Duration(0)
		if s[i+1:] != "" {
			if rest, err = time.ParseDuration(s[i+1:]); err != nil {
				return 0, err
			}
		}
		return time.Duration(days)*24*time.Hour + rest, nil
	}
	return time.ParseDuration(s)
}

// cidrList is a comma list of CIDRs (10.0.0.0/8, fd00::/8), each masked to
// its network; a bare address is its own /32 or /128; empty items are
// skipped.
func cidrList() kind {
	return kind{parse: func(s string) (any, error) {
		var out []netip.Prefix
		for _, item := range strings.Split(s, ",") {
			if item = strings.TrimSpace(item); item == "" {
				continue
			}
			p, err := netip.ParsePrefix(item)
			if err != nil {
				a, aerr := netip.ParseAddr(item)
				if aerr != nil {
					return nil, fmt.Errorf("%q is not a CIDR like 10.0.0.0/8 or fd00::/8", item)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
				p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
			}
			out = append(out, p.Masked())
		}
		return out, nil
	}}
}

// webhookURL is an absolute http or https URL; empty means none. Its
// errors never repeat the value: a Slack incoming-webhook URL is a secret
// in its path.
func webhookURL() kind {
	return kind{
		want:   "is not an absolute http or https URL",
		secret: true,
		parse:  func(s string) (any, error) { return strings.TrimSpace(s), nil },
		valid: func(v any) bool {
			s := v.(string)
			if s == "" {
				return true
			}
			u, err := url.Parse(s)
			return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
		},
	}
}

// whsec is a Standard Webhooks secret, "whsec_" then the base64 of at
// least 16 bytes; empty means none. Its errors never repeat the value.
func whsec() kind {
	return kind{
		want:   `is not a Standard Webhooks secret: "whsec_" then the base64 of at least 16 random bytes (e.g. whsec_$(openssl rand -base64 32))`,
		secret: true,
		parse:  func(s string) (any, error) { return strings.TrimSpace(s), nil },
		valid: func(v any) bool {
			s := v.(string)
			if s == "" {
				return true
			}
			b64, ok := strings.CutPrefix(s, "whsec_")
			if !ok {
				return false
			}
			key, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				key, err = base64.RawStdEncoding.DecodeString(b64)
			}
			return err == nil && len(key) >= 16
		},
	}
}
