package builtin

// The op names of the builtin dialect, one per row of its op table: code
// outside the dialect names an op by its constant, never by a string
// literal, so that a misspelt or removed op fails to compile. A test
// (dialects.TestOpNameConstants) checks that the constants and the rows agree.
const (
	// OpModule is builtin.module: A top-level container of operations.
	OpModule = "builtin.module"
	// OpUnrealizedConversionCast is builtin.unrealized_conversion_cast: A cast between types that a conversion has not resolved yet.
	OpUnrealizedConversionCast = "builtin.unrealized_conversion_cast"
)
