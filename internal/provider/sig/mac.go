package sig

import (
	"crypto/sha256"
	"strings"
)

// MACHeader returns the one HMAC-SHA256 a signature header holds: the value
// after prefix ("sha256=", "v0=", or "" for none), spaces around it trimmed,
// decoded by decode (hex.DecodeString or base64.StdEncoding.DecodeString).
// A header over MaxSignatureHeaderBytes, an empty one, a missing prefix or a
// value that is not 32 bytes is refused (401) with its reason.
func MACHeader(header, prefix string, decode func(string) ([]byte, error)) ([]byte, error) {
	if len(header) > MaxSignatureHeaderBytes {
		return nil, Unauthorized(ReasonSignatureHeaderTooLarge)
	}
	header = strings.TrimSpace(header)
	if header == "" {
		return nil, Unauthorized(ReasonSignatureMissing)
	}
	value, ok := strings.CutPrefix(header, prefix)
	if !ok {
		return nil, Unauthorized(ReasonSignatureMalformed)
	}
	mac, err := decode(value)
	if err != nil || len(mac) != sha256.Size {
		return nil, Unauthorized(ReasonSignatureMalformed)
	}
	return mac, nil
}
