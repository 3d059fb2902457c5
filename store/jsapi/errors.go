package jsapi

//go:generate go run gen.go

// The wire errors live in errors.json: one row per error with its Go name,
// HTTP-like code, nats-server err_code and description. gen.go turns the
// table into errors_generated.go, which defines APIError, an Err<Name>
// value per row for errors.Is, and a New<Name>Error constructor that fills
// the description's {placeholders}. TestErrorsGeneratedUpToDate fails when
// the generated file is stale.
