package sqlite

import (
	"encoding/json"
	"fmt"
)

func encodeHeader(h map[string]string) (string, error) {
	if h == nil {
		return "{}", nil
	}
	b, err := json.Marshal(h)
	if err != nil {
		return "", fmt.Errorf("encode stored header: %w", err)
	}
	return string(b), nil
}

func decodeHeader(s string) (map[string]string, error) {
	h := map[string]string{}
	if err := json.Unmarshal([]byte(s), &h); err != nil {
		return nil, fmt.Errorf("decode stored header: %w", err)
	}
	return h, nil
}
