package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// Origin is the scheme, host and port of a provider's API URL: the only
// place backfill may send that provider's key, and the only place it dials.
type Origin struct {
	Scheme string // "http" or "https"
	Host   string // lower-case host name or IP literal, without brackets
	Port   string // explicit or the scheme's default
}

// String returns scheme://host:port.
func (o Origin) String() string { return o.Scheme + "://" + net.JoinHostPort(o.Host, o.Port) }

// ParseOrigin returns the origin of a provider's API URL: an absolute
// https URL, or http on a loopback host (127.0.0.0/8, ::1, localhost: a
// local fake or a sidecar), never with credentials in it. Its errors never
// repeat the URL, which may carry a token in its query or userinfo.
func ParseOrigin(raw string) (Origin, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		// Not repeated: a key pasted into the URL's variable would be printed.
		return Origin{}, errors.New("not an absolute http(s) URL (the value is not repeated: it may be a key)")
	}
	if u.User != nil {
		return Origin{}, errors.New("carries credentials in the URL: put the key in PGINBOX_API_KEY_<NAME>")
	}
	o := OriginOf(u)
	if o.Scheme == "http" && !Loopback(o.Host) {
		return Origin{}, fmt.Errorf("http:// to %s would send the key in clear: use https (http is allowed on loopback only)", o.Host)
	}
	return o, nil
}

// Loopback reports whether host (a name or an IP literal, without brackets)
// is this machine: localhost, 127.0.0.0/8 or ::1.
func Loopback(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// OriginOf returns the origin of u, with the scheme's default port when u
// names none.
func OriginOf(u *url.URL) Origin {
	o := Origin{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Hostname()), Port: u.Port()}
	if o.Port == "" {
		o.Port = map[string]string{"http": "80", "https": "443"}[o.Scheme]
	}
	return o
}

// Contains reports whether the absolute URL u is on this origin.
func (o Origin) Contains(u *url.URL) bool {
	return (u.Scheme == "http" || u.Scheme == "https") && u.User == nil && OriginOf(u) == o
}

// DialRefusedError is a connection the guarded client would not open: an
// address that is not the configured origin's, or one no API lives at
// (link-local, cloud metadata) that the origin does not name literally.
type DialRefusedError struct {
	Address string
	Reason  string
}

// Error names the address and why it was refused.
func (e *DialRefusedError) Error() string {
	return fmt.Sprintf("backfill refused to dial %s: %s", e.Address, e.Reason)
}

// metadataAddrs are cloud metadata endpoints outside the link-local ranges.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("fd00:ec2::254"),   // AWS IMDS over IPv6
}

// forbiddenIP reports why ip is never dialed unless the origin names it
// literally: "" when it may be.
func forbiddenIP(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local address"
	case ip.IsUnspecified(), ip.IsMulticast():
		return "not a unicast address"
	}
	for _, m := range metadataAddrs {
		if ip == m {
			return "cloud metadata address"
		}
	}
	return ""
}

// NewClient returns the HTTP client of one provider API: it dials only o's
// host and port (the addresses the host resolves to, none of them
// link-local or metadata unless o names that address), never follows a
// redirect (the 3xx is returned as the answer, which callers refuse), and
// ignores proxy variables (a proxy would be dialed instead of the origin).
func NewClient(o Origin) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	literal, litErr := netip.ParseAddr(o.Host)
	isLiteral := litErr == nil
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, &DialRefusedError{Address: addr, Reason: "not host:port"}
		}
		if !strings.EqualFold(host, o.Host) || port != o.Port {
			return nil, &DialRefusedError{Address: addr, Reason: "not the configured origin " + o.String()}
		}
		var ips []netip.Addr
		if isLiteral {
			ips = []netip.Addr{literal}
		} else if ips, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host); err != nil {
			return nil, err
		}
		var lastErr error = &DialRefusedError{Address: addr, Reason: "no address to dial"}
		for _, ip := range ips {
			if why := forbiddenIP(ip); why != "" && !(isLiteral && ip.Unmap() == literal.Unmap()) {
				lastErr = &DialRefusedError{Address: net.JoinHostPort(ip.String(), port), Reason: why + " (" + host + " resolves to it)"}
				continue
			}
			conn, err := dialer.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
			if err == nil {
				return conn, nil
			}
			lastErr = err
		}
		return nil, lastErr
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dial,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          16,
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 30 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// DialRefused reports whether err is a refused dial (a *DialRefusedError).
func DialRefused(err error) bool {
	var d *DialRefusedError
	return errors.As(err, &d)
}
