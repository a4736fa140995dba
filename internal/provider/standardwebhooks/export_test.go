package standardwebhooks

// Exported for the tests of package standardwebhooks_test.
var (
	ParseStandardSignatures = parseStandardSignatures
)
