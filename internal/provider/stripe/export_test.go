package stripe

// Exported for the tests of package stripe_test.
var (
	ParseStripeSignature = parseStripeSignature
)
