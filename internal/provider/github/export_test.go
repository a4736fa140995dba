package github

// Exported for the tests of package github_test.
var (
	ParseGitHubSignature = parseGitHubSignature
)
