package paddle

// Exported for the tests of package paddle_test.
var (
	ParsePaddleSignature = parsePaddleSignature
)
