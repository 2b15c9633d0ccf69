//go:build goexperiment.jsonv2

package jsoncodec

// With the jsonv2 experiment (Go 1.27's default) encoding/json itself runs
// on v2 with v1's options, so comparing Unmarshal with it would compare v2
// with itself.
func init() { encodingJSONOnV2 = true }
