package protocol

import _ "embed"

// AsyncAPI is the protocol's AsyncAPI 3 document (asyncapi.yaml): every
// topic, message and field, for integrators who build their own edge or
// reader. Tests keep it equal to this package's code (asyncapi_test.go) and
// to the traffic of the two halves (sync/mqttsync); make lint-asyncapi
// validates it with the AsyncAPI CLI.
//
//go:embed asyncapi.yaml
var AsyncAPI []byte
