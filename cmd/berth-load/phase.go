package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/berthdev/berth/internal/loadrun"
)

// phase sends rate reviews a second to url for duration, open loop
// (loadrun.OpenLoop).
func phase(client *http.Client, url string, body []byte, rate int, duration time.Duration, workers int) *loadrun.Result {
	return loadrun.OpenLoop(rate, duration, workers, func(int) error { return send(client, url, body) })
}

// send posts one review and checks it was admitted.
func send(client *http.Client, url string, body []byte) error {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(b, &review); err != nil || review.Response == nil {
		return fmt.Errorf("bad response: %.200s", b)
	}
	if !review.Response.Allowed {
		return errors.New("denied: " + review.Response.Result.Message)
	}
	return nil
}
