package linear

// Exported for the tests of package linear_test.
var (
	ParseLinearSignature = parseLinearSignature
	WebhookTimestamp     = webhookTimestamp
)
