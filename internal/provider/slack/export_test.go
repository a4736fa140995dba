package slack

// Exported for the tests of package slack_test.
var (
	ParseSlackSignature = parseSlackSignature
)
