//go:build !linux

package reader

func openSerial(path string, baud int) (serialFile, error) {
	return nil, ErrSerialUnsupported
}
