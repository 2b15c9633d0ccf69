package testengine

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRouterWorkersAPIPD(t *testing.T) {
	_, router := newTestRouter(t, "--pd-disaggregation")
	p := url.PathEscape("http://10.0.0.1:8080")
	steps := []struct {
		method, path, body string
		status             int
		contains           string
	}{
		{"GET", "/workers", "", 200, `"total":0`},
		{"POST", "/workers", `{"url":"http://10.0.0.1:8080","worker_type":"prefill","bootstrap_port":9001}`, 202, `"status":"accepted"`},
		{"POST", "/workers", `{"url":"http://10.0.0.2:8080","worker_type":"decode"}`, 202, "queued"},
		{"POST", "/workers", `{"url":"http://10.0.0.3:8080"}`, 400, "needs worker_type prefill or decode"},
		{"POST", "/workers", `{"url":"http://10.0.0.3:8080","worker_type":"leader"}`, 400, "want regular, prefill or decode"},
		{"POST", "/workers", `{"url":"10.0.0.3","worker_type":"decode"}`, 400, "want http://host:port"},
		{"POST", "/workers", `{"url":"http://10.0.0.3:8080","worker_type":"prefill","bootstrap_port":70000}`, 400, "not a TCP port"},
		{"GET", "/workers", "", 200, `"stats":{"decode_count":1,"prefill_count":1,"regular_count":0}`},
		{"GET", "/workers", "", 200, `"url":"http://10.0.0.1:8080","worker_type":"prefill","bootstrap_port":9001`},
		{"GET", "/workers/" + p, "", 200, `"worker_type":"prefill"`},
		{"GET", "/workers/" + workerID("http://10.0.0.2:8080"), "", 200, `"worker_type":"decode"`},
		{"DELETE", "/workers/" + p, "", 202, "removal queued"},
		{"DELETE", "/workers/" + p, "", 404, "not found"},
		{"DELETE", "/workers/" + workerID("http://10.0.0.2:8080"), "", 202, "removal queued"},
		{"GET", "/workers", "", 200, `"total":0`},
		{"GET", "/list_workers", "", 200, `"urls":[]`},
	}
	for _, s := range steps {
		a := call(t, s.method, router+s.path, s.body)
		assert.Equal(t, s.status, a.status, "%s %s %s: %s", s.method, s.path, s.body, a.body)
		assert.Contains(t, a.body, s.contains, "%s %s %s", s.method, s.path, s.body)
	}
}

func TestRouterWorkersAPIRegular(t *testing.T) {
	_, router := newTestRouter(t)
	a := call(t, "POST", router+"/workers", `{"url":"http://10.0.0.1:8080/"}`)
	assert.Equal(t, 202, a.status, a.body)
	a = call(t, "POST", router+"/workers", `{"url":"http://10.0.0.2:8080","worker_type":"decode"}`)
	assert.Equal(t, 400, a.status)
	assert.Contains(t, a.body, "needs a router started with --pd-disaggregation")
	a = call(t, "GET", router+"/list_workers", "")
	assert.Contains(t, a.body, `"urls":["http://10.0.0.1:8080"]`, "both APIs share one worker set")
}
