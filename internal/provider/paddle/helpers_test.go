package paddle_test

import "github.com/pginbox/pginbox/internal/provider/providertest"

// The helpers every kind's tests share, under the names the tests use.
var (
	macHex          = providertest.MACHex
	paddleHeader    = providertest.PaddleHeader
	headers         = providertest.Headers
	mustProvider    = providertest.MustProvider
	checkReject     = providertest.CheckReject
	verifyReasons   = providertest.VerifyReasons
	checkFuzzReject = providertest.CheckFuzzReject
	checkSigs       = providertest.CheckSigs
	verifyAll       = providertest.VerifyAll
)

const fuzzSig = providertest.FuzzSig
