package linear_test

import "github.com/pginbox/pginbox/internal/provider/providertest"

// The helpers every kind's tests share, under the names the tests use.
var (
	macHex          = providertest.MACHex
	headers         = providertest.Headers
	mustProvider    = providertest.MustProvider
	checkReject     = providertest.CheckReject
	verifyReasons   = providertest.VerifyReasons
	identifyReasons = providertest.IdentifyReasons
	checkFuzzReject = providertest.CheckFuzzReject
	checkSigs       = providertest.CheckSigs
	checkText       = providertest.CheckText
	verifyAll       = providertest.VerifyAll
)

const fuzzSig = providertest.FuzzSig
