package square

// Exported for the tests of package square_test.
var (
	ParseSquareSignature = parseSquareSignature
)
