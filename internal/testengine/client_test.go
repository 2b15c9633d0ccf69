package testengine

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRunChat(t *testing.T) {
	fails := 2
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			_, _ = w.Write([]byte(`{"data":[{"id":"m1"}]}`))
		case "/v1/chat/completions":
			if fails > 0 {
				fails--
				http.Error(w, "not yet", http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte(`{"choices":[{"message":{"content":"hello from m1"}}]}`))
		}
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	code := RunChat(context.Background(), []string{"--url", srv.URL, "--retry-for", "10s"}, &out, &errOut)
	assert.Equal(t, 0, code, errOut.String())
	assert.Equal(t, "hello from m1\n", out.String())
	assert.Contains(t, errOut.String(), "503 Service Unavailable", "retries are reported")

	out.Reset()
	fails = 100
	start := time.Now()
	assert.Equal(t, 1, RunChat(context.Background(), []string{"--url", srv.URL, "--model", "m1"}, &out, &errOut), "no retry: fails at once")
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Empty(t, out.String())
	assert.Equal(t, 2, RunChat(context.Background(), []string{"stray"}, &out, &errOut))
}
