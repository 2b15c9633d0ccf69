package jsoncodec

import (
	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

var v1 = jsonv1.DefaultOptionsV1()

// Unmarshal decodes data into v as encoding/json.Unmarshal does (see the
// package rules).
func Unmarshal(data []byte, v any) error {
	return jsonv2.Unmarshal(data, v, v1)
}
