package shopify

// Exported for the tests of package shopify_test.
var (
	ParseShopifySignature = parseShopifySignature
)
