package sume

// Exported for the tests of package sume_test.
var (
	ParseSumeSignature = parseSumeSignature
)
