package qrdecode

import "image"

// DecodeStep is Decode that also names the attempt that read the code, for
// tests and benchmarks to report.
func DecodeStep(img image.Image) (text, step string, err error) {
	text, i, err := decode(img, steps)
	if i >= 0 {
		step = steps[i].String()
	}
	return text, step, err
}
